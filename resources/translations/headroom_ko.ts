<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="ko_KR">
<context>
    <name>AboutDialog</name>
    <message>
        <source>no CUDA device (this PyTorch is a CPU-only build)</source>
        <translation>CUDA 장치 없음 (이 PyTorch는 CPU 전용 빌드입니다)</translation>
    </message>
    <message>
        <source>no CUDA device (PyTorch built for CUDA {0})</source>
        <translation>CUDA 장치 없음 (PyTorch는 CUDA {0}용 빌드)</translation>
    </message>
    <message>
        <source>not installed</source>
        <translation>설치되지 않음</translation>
    </message>
    <message>
        <source>About Headroom</source>
        <translation>Headroom 정보</translation>
    </message>
    <message>
        <source>Attention</source>
        <translation>어텐션</translation>
    </message>
    <message>
        <source>Logs</source>
        <translation>로그</translation>
    </message>
    <message>
        <source>not written (stderr only)</source>
        <translation>기록되지 않음 (stderr에만 출력)</translation>
    </message>
    <message>
        <source>A desktop chat app for local LLMs that sees an out-of-memory coming before it happens.</source>
        <translation>메모리 부족을 일어나기 전에 내다보는 로컬 LLM용 데스크톱 채팅 앱.</translation>
    </message>
    <message>
        <source>Copy details</source>
        <translation>세부 정보 복사</translation>
    </message>
    <message>
        <source>Close</source>
        <translation>닫기</translation>
    </message>
    <message>
        <source>This installation</source>
        <translation>이 설치</translation>
    </message>
    <message>
        <source>Licences</source>
        <translation>라이선스</translation>
    </message>
    <message>
        <source>Copied</source>
        <translation>복사됨</translation>
    </message>
    <message>
        <source>no model loaded</source>
        <translation>불러온 모델 없음</translation>
    </message>
    <message>
        <source>{0} ({1} on {2}, {3})</source>
        <translation>{0} ({2}의 {1}, {3})</translation>
    </message>
</context>
<context>
    <name>AdmissionDialog</name>
    <message>
        <source>Not enough memory for this turn</source>
        <translation>이번 턴에 필요한 메모리가 부족합니다</translation>
    </message>
    <message>
        <source>This turn does not fit the context</source>
        <translation>이번 턴이 컨텍스트에 들어가지 않습니다</translation>
    </message>
    <message>
        <source>This turn would run out of memory</source>
        <translation>이번 턴은 메모리가 부족해집니다</translation>
    </message>
    <message>
        <source>This turn does not fit the model&apos;s context</source>
        <translation>이번 턴이 모델의 컨텍스트에 들어가지 않습니다</translation>
    </message>
    <message>
        <source>Also: {0}</source>
        <translation>그 밖에: {0}</translation>
    </message>
    <message>
        <source>Long text can go in as an attached file instead: an attached file is searched for the passages each question needs, so only those take room in the context.</source>
        <translation>긴 텍스트는 파일로 첨부할 수도 있습니다. 첨부한 파일에서는 질문마다 필요한 부분만 찾아 넣으므로, 그 부분만 컨텍스트를 차지합니다.</translation>
    </message>
    <message>
        <source>= KV {0} + prefill spike {1} + error bar {2} + margin {3}</source>
        <translation>= KV {0} + 프리필 급증분 {1} + 오차 범위 {2} + 안전 여유 {3}</translation>
    </message>
    <message>
        <source>Needed</source>
        <translation>필요</translation>
    </message>
    <message>
        <source>Free</source>
        <translation>여유</translation>
    </message>
    <message>
        <source>{0}  (driver-free; cached memory not counted)</source>
        <translation>{0}  (드라이버 기준 여유 메모리, 캐시된 메모리는 제외)</translation>
    </message>
    <message>
        <source>Short by</source>
        <translation>부족분</translation>
    </message>
    <message>
        <source>Error bar</source>
        <translation>오차 범위</translation>
    </message>
    <message>
        <source>± {0}  (± {1} of the turn: how far recent projections were off)</source>
        <translation>± {0}  (턴의 ± {1}: 최근 예측이 빗나간 정도)</translation>
    </message>
    <message>
        <source>Prompt + max new tokens</source>
        <translation>프롬프트 + 최대 새 토큰 수</translation>
    </message>
    <message>
        <source>{0} + {1} = {2} tokens</source>
        <translation>{0} + {1} = {2} 토큰</translation>
    </message>
    <message>
        <source>Context limit</source>
        <translation>컨텍스트 한도</translation>
    </message>
    <message numerus="yes">
        <source>{0} tokens</source>
        <translation>
            <numerusform>{0} 토큰</numerusform>
        </translation>
    </message>
    <message>
        <source>Over by</source>
        <translation>초과분</translation>
    </message>
    <message>
        <source>From now on this chat keeps its keys and values in 8 bits: about half the memory of 16-bit, with a small loss of precision. Its cached history is dropped: this answer reads the whole history again once. Change it back in the chat bar (KV cache).</source>
        <translation>이제부터 이 대화는 키와 값을 8비트로 보관합니다. 16비트의 절반 정도 메모리를 쓰며 정밀도가 약간 떨어집니다. 캐시된 기록은 버려지므로 이번 답변은 전체 기록을 한 번 다시 읽습니다. 채팅 막대의 KV 캐시에서 되돌릴 수 있습니다.</translation>
    </message>
    <message>
        <source>Attach as a file</source>
        <translation>파일로 첨부</translation>
    </message>
    <message>
        <source>Take the message out of the chat and attach its text to the next message as a text file; then write your question about it.</source>
        <translation>메시지를 채팅에서 빼고, 그 내용을 다음 메시지에 텍스트 파일로 첨부합니다. 그런 다음 그 내용에 대한 질문을 쓰세요.</translation>
    </message>
    <message>
        <source>Send anyway</source>
        <translation>그래도 보내기</translation>
    </message>
    <message>
        <source>Start the turn although it is projected not to fit. It may fail with an out-of-memory error mid-answer; Headroom then frees the memory and keeps the partial answer.</source>
        <translation>들어가지 않을 것으로 예측되지만 턴을 시작합니다. 답변 도중 메모리 부족 오류로 실패할 수 있으며, 그러면 Headroom이 메모리를 해제하고 그때까지의 답변을 보존합니다.</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>취소</translation>
    </message>
</context>
<context>
    <name>Application</name>
    <message>
        <source>not valid JSON at line {0}, column {1}</source>
        <translation>{0}행 {1}열에서 JSON 형식이 올바르지 않음</translation>
    </message>
    <message>
        <source>Settings could not be read ({0}); the file was kept as {1} and the defaults are used.</source>
        <translation>설정을 읽을 수 없습니다({0}). 파일은 {1}(으)로 보관했고 기본값을 사용합니다.</translation>
    </message>
    <message>
        <source>Settings could not be read ({0}); the defaults are used.</source>
        <translation>설정을 읽을 수 없습니다({0}). 기본값을 사용합니다.</translation>
    </message>
    <message>
        <source>Settings: {0}</source>
        <translation>설정: {0}</translation>
    </message>
    <message>
        <source>{0} {1} is out of range; {2} is used.</source>
        <translation>{0} 값 {1}은(는) 범위를 벗어나 {2}을(를) 사용합니다.</translation>
    </message>
    <message>
        <source>{0} {1} is out of range; the default {2} is used.</source>
        <translation>{0} 값 {1}은(는) 범위를 벗어나 기본값 {2}을(를) 사용합니다.</translation>
    </message>
    <message>
        <source>{0} {1} is not an object of settings; the defaults are used.</source>
        <translation>{0} 값 {1}은(는) 설정 객체가 아니어서 기본값을 사용합니다.</translation>
    </message>
    <message>
        <source>{0} {1} is not a finite number; the default {2} is used.</source>
        <translation>{0} 값 {1}은(는) 유한한 숫자가 아니어서 기본값 {2}을(를) 사용합니다.</translation>
    </message>
    <message>
        <source>{0} {1} is not a whole number; the default {2} is used.</source>
        <translation>{0} 값 {1}은(는) 정수가 아니어서 기본값 {2}을(를) 사용합니다.</translation>
    </message>
    <message>
        <source>{0} {1} is not text; the default {2} is used.</source>
        <translation>{0} 값 {1}은(는) 텍스트가 아니어서 기본값 {2}을(를) 사용합니다.</translation>
    </message>
    <message>
        <source>{0} {1} is not a number; the default {2} is used.</source>
        <translation>{0} 값 {1}은(는) 숫자가 아니어서 기본값 {2}을(를) 사용합니다.</translation>
    </message>
    <message>
        <source>{0} {1} is not one of its choices; the default {2} is used.</source>
        <translation>{0} 값 {1}은(는) 고를 수 있는 값이 아니어서 기본값 {2}을(를) 사용합니다.</translation>
    </message>
    <message>
        <source>{0} {1} holds a user name or password before &apos;@&apos;; {2} is used: put the key in Settings, API key.</source>
        <translation>{0} 값 {1}에는 &apos;@&apos; 앞에 사용자 이름이나 비밀번호가 들어 있어 {2}을(를) 사용합니다. 키는 설정의 API 키 칸에 넣으세요.</translation>
    </message>
    <message>
        <source>random</source>
        <translation>무작위</translation>
    </message>
    <message>
        <source>Headroom is already running for this profile ({0}) but does not answer. Close it (or end its process) and start Headroom again.</source>
        <translation>이 프로필({0})로 Headroom이 이미 실행 중이지만 응답하지 않습니다. 그 창을 닫거나 프로세스를 종료한 뒤 Headroom을 다시 시작하세요.</translation>
    </message>
</context>
<context>
    <name>AttachmentBar</name>
    <message>
        <source>Attach…</source>
        <translation>첨부…</translation>
    </message>
    <message>
        <source>Attach text, Markdown, source code, PDF or DOCX files to the next message (or drop them onto the message box). A file that fits goes in whole; a larger one is searched for the parts that answer.</source>
        <translation>텍스트, Markdown, 소스 코드, PDF 또는 DOCX 파일을 다음 메시지에 첨부합니다(메시지 입력란에 끌어다 놓아도 됩니다). 들어가는 파일은 통째로 넣고, 더 큰 파일은 답에 필요한 부분을 찾아 넣습니다.</translation>
    </message>
    <message>
        <source>Remove this attachment</source>
        <translation>이 첨부 파일 제거</translation>
    </message>
    <message>
        <source>Attachment {0}</source>
        <translation>첨부 파일 {0}</translation>
    </message>
    <message>
        <source>Attach files to the next message</source>
        <translation>다음 메시지에 파일 첨부</translation>
    </message>
    <message>
        <source>Documents (*.txt *.md *.pdf *.docx *.py *.json *.csv *.log *.html *.xml *.yaml *.yml *.toml);;All files (*)</source>
        <translation>문서 (*.txt *.md *.pdf *.docx *.py *.json *.csv *.log *.html *.xml *.yaml *.yml *.toml);;모든 파일 (*)</translation>
    </message>
</context>
<context>
    <name>Attachments</name>
    <message>
        <source>reading…</source>
        <translation>읽는 중…</translation>
    </message>
    <message>
        <source>reading {0}%</source>
        <translation>읽는 중 {0}%</translation>
    </message>
    <message>
        <source>, {0} pages</source>
        <translation>, {0}쪽</translation>
    </message>
    <message numerus="yes">
        <source>{0} characters{1}</source>
        <translation>
            <numerusform>{0}자{1}</numerusform>
        </translation>
    </message>
    <message>
        <source>Could not attach {0}: {1}</source>
        <translation>{0} 첨부 실패: {1}</translation>
    </message>
    <message>
        <source>pasted text</source>
        <translation>붙여넣은 텍스트</translation>
    </message>
    <message>
        <source>{0} is back in this chat</source>
        <translation>{0}을(를) 이 대화에 되돌렸습니다</translation>
    </message>
    <message numerus="yes">
        <source>{0}: whole file, {1} tokens</source>
        <translation>
            <numerusform>{0}: 파일 전체, {1} 토큰</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>{0}: too large for this turn ({1} tokens): retrieving {2} of {3} excerpts, {4} tokens</source>
        <translation>
            <numerusform>{0}: 이 턴에 넣기에 너무 큽니다({1} 토큰). 발췌 {3}개 중 {2}개를 검색해 넣습니다, {4} 토큰</numerusform>
        </translation>
    </message>
    <message>
        <source>{0}: too large for this turn ({1} tokens) and no room left for an excerpt</source>
        <translation>{0}: 이 턴에 넣기에 너무 크고({1} 토큰) 발췌를 넣을 자리도 남지 않았습니다</translation>
    </message>
</context>
<context>
    <name>Backend</name>
    <message>
        <source>The new language is used from the next start of Headroom</source>
        <translation>새 언어는 Headroom을 다음에 시작할 때부터 적용됩니다</translation>
    </message>
    <message>
        <source>Could not store the API key in {0}: {1}. It is used until Headroom closes.</source>
        <translation>{0}에 API 키를 저장하지 못했습니다: {1}. Headroom을 닫을 때까지는 이 키를 사용합니다.</translation>
    </message>
    <message>
        <source>api_keys.json could not be read, so the keys in it were not used; it was kept as {0}.</source>
        <translation>api_keys.json을 읽지 못해 그 안의 키를 사용하지 않았습니다. 파일은 {0}(으)로 보관했습니다.</translation>
    </message>
    <message>
        <source>API key forgotten</source>
        <translation>API 키를 삭제했습니다</translation>
    </message>
    <message>
        <source>API key stored in the OS keyring</source>
        <translation>API 키를 OS 키링에 저장했습니다</translation>
    </message>
    <message>
        <source>API key stored in api_keys.json (owner-only)</source>
        <translation>API 키를 api_keys.json에 저장했습니다 (소유자만 읽기 가능)</translation>
    </message>
</context>
<context>
    <name>BackendForm</name>
    <message>
        <source>Local model (this computer)</source>
        <translation>로컬 모델 (이 컴퓨터)</translation>
    </message>
    <message>
        <source>Remote server (OpenAI-compatible, e.g. vLLM)</source>
        <translation>원격 서버 (OpenAI 호환, 예: vLLM)</translation>
    </message>
    <message>
        <source>The served model name, e.g. meta-llama/Llama-3.1-8B-Instruct</source>
        <translation>서버가 제공하는 모델 이름, 예: meta-llama/Llama-3.1-8B-Instruct</translation>
    </message>
    <message>
        <source>Stored — type to replace</source>
        <translation>저장됨 — 입력하면 바뀝니다</translation>
    </message>
    <message>
        <source>Optional (vllm serve --api-key)</source>
        <translation>선택 사항 (vllm serve --api-key)</translation>
    </message>
    <message>
        <source>Forget the stored key</source>
        <translation>저장된 키 삭제</translation>
    </message>
    <message>
        <source>Prompt tokens are counted with a local tokenizer when the model name matches a local folder, else with the server&apos;s /tokenize (vLLM), else as ≈ 4 characters per token + 25 %.</source>
        <translation>프롬프트 토큰은 모델 이름이 로컬 폴더와 일치하면 로컬 토크나이저로, 아니면 서버의 /tokenize(vLLM)로, 그것도 안 되면 토큰당 약 4글자 + 25 %로 셉니다.</translation>
    </message>
    <message>
        <source>Answered by</source>
        <translation>답변하는 곳</translation>
    </message>
    <message>
        <source>Server URL</source>
        <translation>서버 URL</translation>
    </message>
    <message>
        <source>Model name</source>
        <translation>모델 이름</translation>
    </message>
    <message>
        <source>API key</source>
        <translation>API 키</translation>
    </message>
    <message>
        <source>The server URL holds a name or password before “@”. Put the key in the API key field instead.</source>
        <translation>서버 URL의 “@” 앞에 이름이나 비밀번호가 들어 있습니다. 키는 API 키 칸에 넣으세요.</translation>
    </message>
    <message>
        <source>The server URL {0} is not an http(s) URL such as http://gpu-box:8000/v1.</source>
        <translation>서버 URL {0}은(는) http://gpu-box:8000/v1 같은 http(s) URL이 아닙니다.</translation>
    </message>
    <message>
        <source>(empty)</source>
        <translation>(비어 있음)</translation>
    </message>
    <message>
        <source>Enter the model name the server serves.</source>
        <translation>서버가 제공하는 모델 이름을 입력하세요.</translation>
    </message>
</context>
<context>
    <name>Chat</name>
    <message>
        <source>Settings cannot be saved ({0}): changes apply until Headroom closes.</source>
        <translation>설정을 저장할 수 없습니다({0}): 변경 사항은 Headroom을 닫을 때까지만 적용됩니다.</translation>
    </message>
</context>
<context>
    <name>ChatBar</name>
    <message>
        <source>Notes</source>
        <translation>메모</translation>
    </message>
    <message>
        <source>Pinned notes: kept in every prompt of this chat</source>
        <translation>고정 메모: 이 채팅의 모든 프롬프트에 들어갑니다</translation>
    </message>
    <message>
        <source>Summarize now</source>
        <translation>지금 요약</translation>
    </message>
    <message>
        <source>Fold the older turns into the summary now; the last turns stay as they are (Settings: keep the last turns verbatim)</source>
        <translation>오래된 턴을 지금 요약으로 접습니다. 마지막 턴들은 그대로 둡니다(설정: 원문 유지 턴 수)</translation>
    </message>
    <message>
        <source>Stop</source>
        <translation>중지</translation>
    </message>
    <message>
        <source>Stop writing the summary; the turns stay in the window for now</source>
        <translation>요약 작성을 멈춥니다. 턴은 당분간 창에 남습니다</translation>
    </message>
    <message>
        <source>Summarizing earlier turns…</source>
        <translation>이전 턴을 요약하는 중…</translation>
    </message>
    <message>
        <source>The model writes the summary: on a CPU this takes a minute or two, on a GPU seconds.</source>
        <translation>요약은 모델이 직접 씁니다. CPU에서는 1~2분, GPU에서는 몇 초가 걸립니다.</translation>
    </message>
    <message>
        <source>Preset</source>
        <translation>프리셋</translation>
    </message>
    <message>
        <source>A preset sets this chat&apos;s system prompt and sampling</source>
        <translation>프리셋은 이 채팅의 시스템 프롬프트와 샘플링을 정합니다</translation>
    </message>
    <message>
        <source>KV cache</source>
        <translation>KV 캐시</translation>
    </message>
    <message>
        <source>How this chat keeps its KV cache (the model&apos;s memory of the conversation). 8-bit takes about half the memory of 16-bit, so about twice the context fits, with a small loss of precision; auto uses 8-bit only when a turn would not fit in 16-bit. A change drops the cache: the next answer reads the whole history again once.</source>
        <translation>이 대화가 KV 캐시(대화에 대한 모델의 기억)를 보관하는 방식입니다. 8비트는 16비트의 절반 정도 메모리를 써서 약 두 배의 컨텍스트가 들어가며, 정밀도가 약간 떨어집니다. 자동은 16비트로 들어가지 않는 턴에서만 8비트를 씁니다. 바꾸면 캐시가 버려지고 다음 답변이 전체 기록을 한 번 다시 읽습니다.</translation>
    </message>
    <message>
        <source>16-bit</source>
        <translation>16비트</translation>
    </message>
    <message>
        <source>8-bit</source>
        <translation>8비트</translation>
    </message>
    <message>
        <source>auto</source>
        <translation>자동</translation>
    </message>
    <message>
        <source>Custom settings</source>
        <translation>사용자 설정</translation>
    </message>
    <message>
        <source>Manage presets…</source>
        <translation>프리셋 관리…</translation>
    </message>
    <message>
        <source>{bits}-bit</source>
        <translation>{bits}비트</translation>
    </message>
    <message>
        <source>The server keeps its own KV cache: this choice is for the local model.</source>
        <translation>서버는 자체 KV 캐시를 씁니다. 이 선택은 로컬 모델용입니다.</translation>
    </message>
    <message>
        <source>Notes · ≈{0}</source>
        <translation>메모 · ≈{0}</translation>
    </message>
    <message>
        <source>Wait for the reply to end before summarizing</source>
        <translation>요약하기 전에 답변이 끝날 때까지 기다리세요</translation>
    </message>
    <message numerus="yes">
        <source>The turns before the last %n are already in the summary</source>
        <translation>
            <numerusform>마지막 턴 %n개 앞의 턴은 이미 요약에 들어 있습니다</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>Nothing to summarize yet: the last %n turns always stay as they are (Settings: keep the last turns verbatim)</source>
        <translation>
            <numerusform>아직 요약할 것이 없습니다. 마지막 턴 %n개는 항상 그대로 남습니다(설정: 원문 유지 턴 수)</numerusform>
        </translation>
    </message>
    <message>
        <source>Summarizing earlier turns… {0}</source>
        <translation>이전 턴을 요약하는 중… {0}</translation>
    </message>
</context>
<context>
    <name>ChatView</name>
    <message>
        <source>Conversation</source>
        <translation>대화</translation>
    </message>
    <message numerus="yes">
        <source>Show %n earlier messages</source>
        <translation>
            <numerusform>이전 메시지 %n개 보기</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>CodeBlockView</name>
    <message>
        <source>Copy</source>
        <translation>복사</translation>
    </message>
    <message>
        <source>Copy this code to the clipboard</source>
        <translation>이 코드를 클립보드에 복사</translation>
    </message>
    <message>
        <source>Copy code</source>
        <translation>코드 복사</translation>
    </message>
    <message>
        <source>Code</source>
        <translation>코드</translation>
    </message>
    <message>
        <source>Copied</source>
        <translation>복사됨</translation>
    </message>
</context>
<context>
    <name>Composer</name>
    <message>
        <source>Message Headroom — Enter to send, Shift+Enter for a new line</source>
        <translation>Headroom에 메시지 — Enter로 보내기, Shift+Enter로 줄 바꿈</translation>
    </message>
    <message>
        <source>Message</source>
        <translation>메시지</translation>
    </message>
    <message>
        <source>Enter sends, Shift+Enter starts a new line</source>
        <translation>Enter는 보내기, Shift+Enter는 줄 바꿈</translation>
    </message>
    <message>
        <source>Send</source>
        <translation>보내기</translation>
    </message>
    <message>
        <source>Stop</source>
        <translation>중지</translation>
    </message>
</context>
<context>
    <name>ContextChoice</name>
    <message>
        <source>Context:</source>
        <translation>컨텍스트:</translation>
    </message>
    <message>
        <source>Custom</source>
        <translation>직접 지정</translation>
    </message>
    <message numerus="yes">
        <source> tokens</source>
        <translation>
            <numerusform> 토큰</numerusform>
        </translation>
    </message>
    <message>
        <source>Custom context length in tokens</source>
        <translation>직접 지정한 컨텍스트 길이(토큰)</translation>
    </message>
    <message numerus="yes">
        <source>As in Settings: {0} tokens</source>
        <translation>
            <numerusform>설정과 같이: {0} 토큰</numerusform>
        </translation>
    </message>
    <message>
        <source>Auto (reading…)</source>
        <translation>자동 (읽는 중…)</translation>
    </message>
    <message>
        <source>Auto</source>
        <translation>자동</translation>
    </message>
    <message numerus="yes">
        <source>Auto: fits {0} tokens</source>
        <translation>
            <numerusform>자동: {0} 토큰까지 들어감</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>Trained for {0} tokens.</source>
        <translation>
            <numerusform>학습된 컨텍스트는 {0} 토큰입니다.</numerusform>
        </translation>
    </message>
    <message>
        <source>The plan fits {0} here.</source>
        <translation>계획상 이 컴퓨터에는 {0}까지 들어갑니다.</translation>
    </message>
    <message>
        <source>The plan fits no useful context here.</source>
        <translation>계획상 이 컴퓨터에는 쓸 만한 컨텍스트가 들어가지 않습니다.</translation>
    </message>
    <message>
        <source>With an 8-bit KV cache (chosen per chat) {0} fit.</source>
        <translation>8비트 KV 캐시(대화마다 선택)로는 {0}이(가) 들어갑니다.</translation>
    </message>
    <message numerus="yes">
        <source>A turn that fills more than {0} tokens will be refused for memory (or sent anyway at your risk).</source>
        <translation>
            <numerusform>{0} 토큰을 넘게 채우는 턴은 메모리 때문에 거절됩니다(위험을 감수하고 그래도 보낼 수는 있습니다).</numerusform>
        </translation>
    </message>
    <message>
        <source>Max new tokens ({0}) leaves the conversation {1} of these {2} tokens: lower it in Settings, or choose a larger context.</source>
        <translation>최대 새 토큰 수({0})를 빼면 이 {2} 토큰 중 대화에 남는 것은 {1} 토큰입니다. 설정에서 낮추거나 더 큰 컨텍스트를 고르세요.</translation>
    </message>
</context>
<context>
    <name>ConversationList</name>
    <message>
        <source>New chat</source>
        <translation>새 채팅</translation>
    </message>
    <message>
        <source>Today</source>
        <translation>오늘</translation>
    </message>
    <message>
        <source>Yesterday</source>
        <translation>어제</translation>
    </message>
    <message>
        <source>Previous 7 days</source>
        <translation>지난 7일</translation>
    </message>
    <message>
        <source>Previous 30 days</source>
        <translation>지난 30일</translation>
    </message>
    <message>
        <source>{0} {1}</source>
        <comment>month name, year</comment>
        <translation>{1}년 {0}</translation>
    </message>
    <message>
        <source>Start a new conversation (Ctrl+N)</source>
        <translation>새 대화 시작 (Ctrl+N)</translation>
    </message>
    <message>
        <source>Search conversations</source>
        <translation>대화 검색</translation>
    </message>
    <message>
        <source>Undo</source>
        <translation>실행 취소</translation>
    </message>
    <message>
        <source>Rename</source>
        <translation>이름 바꾸기</translation>
    </message>
    <message>
        <source>Export as Markdown…</source>
        <translation>Markdown으로 내보내기…</translation>
    </message>
    <message>
        <source>Export as JSON…</source>
        <translation>JSON으로 내보내기…</translation>
    </message>
    <message>
        <source>Delete</source>
        <translation>삭제</translation>
    </message>
    <message numerus="yes">
        <source>%n messages · last used {0}</source>
        <translation>
            <numerusform>메시지 %n개 · 마지막 사용 {0}</numerusform>
        </translation>
    </message>
    <message>
        <source>F2 to rename · right-click for more</source>
        <translation>F2로 이름 바꾸기 · 오른쪽 클릭으로 더 보기</translation>
    </message>
    <message>
        <source>No conversations match “{0}”.</source>
        <translation>“{0}”와(과) 일치하는 대화가 없습니다.</translation>
    </message>
    <message>
        <source>No conversations yet.
Your chats are saved here.</source>
        <translation>아직 대화가 없습니다.
채팅은 여기에 저장됩니다.</translation>
    </message>
</context>
<context>
    <name>Conversations</name>
    <message>
        <source>The answer in “{0}” is still being written and will be saved there. Stop ends it; then you can send here.</source>
        <translation>“{0}”의 답변을 아직 쓰는 중이며 그 대화에 저장됩니다. 중지하면 끝나고, 그다음 여기서 보낼 수 있습니다.</translation>
    </message>
    <message>
        <source>Stop the current reply before switching versions.</source>
        <translation>버전을 바꾸기 전에 현재 답변을 멈추세요.</translation>
    </message>
    <message>
        <source>Stop the current reply before branching.</source>
        <translation>분기하기 전에 현재 답변을 멈추세요.</translation>
    </message>
    <message>
        <source>{0} (branch)</source>
        <translation>{0} (분기)</translation>
    </message>
    <message>
        <source>16-bit</source>
        <translation>16비트</translation>
    </message>
    <message>
        <source>8-bit</source>
        <translation>8비트</translation>
    </message>
    <message>
        <source>auto (8-bit only when 16-bit does not fit)</source>
        <translation>자동(16비트로 들어가지 않을 때만 8비트)</translation>
    </message>
    <message>
        <source>KV cache for this chat: {0}.</source>
        <translation>이 대화의 KV 캐시: {0}.</translation>
    </message>
    <message>
        <source>Its cached history is dropped when the precision changes: the next answer reads the whole history again once.</source>
        <translation>정밀도를 바꾸면 캐시된 기록이 버려집니다. 다음 답변은 전체 기록을 한 번 다시 읽습니다.</translation>
    </message>
    <message>
        <source>Could not export to {0}: {1}</source>
        <translation>{0}(으)로 내보내지 못했습니다: {1}</translation>
    </message>
    <message>
        <source>Exported to {0}</source>
        <translation>{0}(으)로 내보냈습니다</translation>
    </message>
</context>
<context>
    <name>CrashDialog</name>
    <message>
        <source>Headroom hit an unexpected error</source>
        <translation>Headroom에서 예기치 않은 오류가 발생했습니다</translation>
    </message>
    <message>
        <source>Headroom keeps running and your conversations are saved. If this keeps happening, please report it with the details below.</source>
        <translation>Headroom은 계속 실행되며 대화는 저장되어 있습니다. 이 문제가 반복되면 아래 세부 정보와 함께 알려 주세요.</translation>
    </message>
    <message>
        <source>The details are also in the log: {0}</source>
        <translation>세부 정보는 로그에도 있습니다: {0}</translation>
    </message>
    <message>
        <source>Copy details</source>
        <translation>세부 정보 복사</translation>
    </message>
    <message>
        <source>Close</source>
        <translation>닫기</translation>
    </message>
    <message>
        <source>Headroom keeps running, but your conversations may not be saved until it restarts: changes since the damage may be lost.</source>
        <translation>Headroom은 계속 실행되지만, 다시 시작하기 전까지는 대화가 저장되지 않을 수 있습니다. 손상 이후의 변경 내용은 사라질 수 있습니다.</translation>
    </message>
    <message>
        <source>Headroom keeps running, but your conversations are not being saved now: changes since saving stopped may be lost (“Not saving” in the status bar says why). If this keeps happening, please report it with the details below.</source>
        <translation>Headroom은 계속 실행되지만 지금은 대화가 저장되지 않고 있습니다: 저장이 멈춘 뒤의 변경 사항은 사라질 수 있습니다 (상태 표시줄의 “저장 안 됨”에 이유가 나옵니다). 이 문제가 반복되면 아래 세부 정보와 함께 알려 주세요.</translation>
    </message>
    <message>
        <source>Something went wrong inside Headroom</source>
        <translation>Headroom 내부에서 문제가 발생했습니다</translation>
    </message>
    <message numerus="yes">
        <source>%n unexpected errors inside Headroom</source>
        <translation>
            <numerusform>Headroom 내부의 예기치 않은 오류 %n건</numerusform>
        </translation>
    </message>
    <message>
        <source>Copied</source>
        <translation>복사됨</translation>
    </message>
</context>
<context>
    <name>DecodePath</name>
    <message>
        <source>compiled decode</source>
        <translation>컴파일된 디코드</translation>
    </message>
    <message>
        <source>eager decode</source>
        <translation>컴파일되지 않은 디코드</translation>
    </message>
    <message>
        <source>eager decode, static KV cache</source>
        <translation>컴파일되지 않은 디코드, 고정 크기 KV 캐시</translation>
    </message>
    <message>
        <source>eager decode, growing KV cache</source>
        <translation>컴파일되지 않은 디코드, 늘어나는 KV 캐시</translation>
    </message>
    <message>
        <source>decoded by the server</source>
        <translation>서버에서 디코드</translation>
    </message>
    <message>
        <source>{0}-bit</source>
        <translation>{0}비트</translation>
    </message>
    <message>
        <source>{0} KV step not compiled yet</source>
        <translation>{0} KV 단계가 아직 컴파일되지 않음</translation>
    </message>
    <message>
        <source>{0} KV step failed to compile</source>
        <translation>{0} KV 단계 컴파일 실패</translation>
    </message>
    <message>
        <source>{0} ({1})</source>
        <translation>{0} ({1})</translation>
    </message>
</context>
<context>
    <name>DocumentChips</name>
    <message>
        <source>{0} pages</source>
        <translation>{0}쪽</translation>
    </message>
    <message numerus="yes">
        <source>{0} characters</source>
        <translation>
            <numerusform>{0}자</numerusform>
        </translation>
    </message>
    <message>
        <source>Attached to this message; sent again when it is edited or answered again</source>
        <translation>이 메시지에 첨부됨. 메시지를 고치거나 답변을 다시 받을 때 다시 보냅니다</translation>
    </message>
    <message>
        <source>Remove {0} from this chat</source>
        <translation>이 대화에서 {0} 빼기</translation>
    </message>
    <message>
        <source>Remove {0}</source>
        <translation>{0} 빼기</translation>
    </message>
</context>
<context>
    <name>DocumentRefusal</name>
    <message>
        <source>a PNG image</source>
        <translation>PNG 이미지</translation>
    </message>
    <message>
        <source>a JPEG image</source>
        <translation>JPEG 이미지</translation>
    </message>
    <message>
        <source>a GIF image</source>
        <translation>GIF 이미지</translation>
    </message>
    <message>
        <source>a ZIP archive</source>
        <translation>ZIP 압축 파일</translation>
    </message>
    <message>
        <source>a gzip archive</source>
        <translation>gzip 압축 파일</translation>
    </message>
    <message>
        <source>a 7-Zip archive</source>
        <translation>7-Zip 압축 파일</translation>
    </message>
    <message>
        <source>a Linux program</source>
        <translation>Linux 실행 파일</translation>
    </message>
    <message>
        <source>a Windows program</source>
        <translation>Windows 실행 파일</translation>
    </message>
    <message>
        <source>an old Office file</source>
        <translation>이전 형식의 Office 파일</translation>
    </message>
    <message>
        <source>a GGUF model</source>
        <translation>GGUF 모델</translation>
    </message>
    <message>
        <source>an SQLite database</source>
        <translation>SQLite 데이터베이스</translation>
    </message>
    <message>
        <source>an MP3 file</source>
        <translation>MP3 파일</translation>
    </message>
    <message>
        <source>binary data</source>
        <translation>바이너리 데이터</translation>
    </message>
    <message>
        <source>Korean</source>
        <translation>한국어</translation>
    </message>
    <message>
        <source>Japanese</source>
        <translation>일본어</translation>
    </message>
    <message>
        <source>Simplified Chinese</source>
        <translation>중국어 간체</translation>
    </message>
    <message>
        <source>Traditional Chinese</source>
        <translation>중국어 번체</translation>
    </message>
    <message>
        <source>Western European</source>
        <translation>서유럽어</translation>
    </message>
    <message>
        <source>Cyrillic</source>
        <translation>키릴 문자</translation>
    </message>
    <message>
        <source>If its text looks wrong, save it as UTF-8 and attach it again.</source>
        <translation>글자가 깨져 보이면 UTF-8로 저장한 뒤 다시 첨부하세요.</translation>
    </message>
    <message>
        <source>{0} is not UTF-8: it was read as {1} text in the {2} encoding. {3}</source>
        <translation>{0} 파일은 UTF-8이 아니어서 {2} 인코딩의 {1} 텍스트로 읽었습니다. {3}</translation>
    </message>
    <message>
        <source>{0} is not UTF-8: it was read as text in the {1} encoding. {2}</source>
        <translation>{0} 파일은 UTF-8이 아니어서 {1} 인코딩의 텍스트로 읽었습니다. {2}</translation>
    </message>
    <message>
        <source>not a text file (looks like {0})</source>
        <translation>텍스트 파일이 아닙니다({0}인 것 같습니다)</translation>
    </message>
    <message>
        <source>the file is {0}; files up to {1} can be attached</source>
        <translation>파일 크기가 {0}입니다. {1}까지 첨부할 수 있습니다</translation>
    </message>
    <message>
        <source>its text is about {0} characters; up to {1} can be attached (split it, or attach the part you need)</source>
        <translation>텍스트가 약 {0}자입니다. {1}자까지 첨부할 수 있습니다(나누거나 필요한 부분만 첨부하세요)</translation>
    </message>
    <message>
        <source>its name says {0}, but it is not a {0} file; if it holds text, rename it to .txt and attach it again</source>
        <translation>이름은 {0} 파일이지만 실제로는 {0} 파일이 아닙니다. 텍스트라면 확장자를 .txt로 바꾼 뒤 다시 첨부하세요</translation>
    </message>
    <message>
        <source>it is UTF-8 text with some bytes that are not: the file may be damaged or mix encodings; fix or remove those bytes and attach it again</source>
        <translation>UTF-8 텍스트이지만 일부 바이트가 UTF-8이 아닙니다. 파일이 손상되었거나 여러 인코딩이 섞여 있을 수 있으니 그 바이트를 고치거나 지운 뒤 다시 첨부하세요</translation>
    </message>
    <message>
        <source>open it in a text editor, save it as UTF-8 and attach it again</source>
        <translation>텍스트 편집기에서 열어 UTF-8로 저장한 뒤 다시 첨부하세요</translation>
    </message>
    <message>
        <source>it is text in an older single-byte encoding (such as Latin-1 or a Windows code page), not UTF-8; {0}</source>
        <translation>예전 단일 바이트 인코딩(Latin-1이나 Windows 코드 페이지 등)으로 저장된 텍스트라 UTF-8이 아닙니다. {0}</translation>
    </message>
    <message>
        <source>it is {0} text in the {1} encoding, not UTF-8; {2}</source>
        <translation>{1} 인코딩으로 저장된 {0} 텍스트라 UTF-8이 아닙니다. {2}</translation>
    </message>
    <message>
        <source>it is text in the {0} encoding, not UTF-8; {1}</source>
        <translation>{0} 인코딩으로 저장된 텍스트라 UTF-8이 아닙니다. {1}</translation>
    </message>
    <message>
        <source>it is not UTF-8 text, and its encoding cannot be told; {0}</source>
        <translation>UTF-8 텍스트가 아니며, 어떤 인코딩인지 알 수 없습니다. {0}</translation>
    </message>
    <message>
        <source>this {0} file cannot be read (it may be damaged or incomplete)</source>
        <translation>이 {0} 파일을 읽을 수 없습니다(손상되었거나 일부만 받은 파일일 수 있습니다)</translation>
    </message>
    <message>
        <source>this PDF is AES-encrypted and the cryptography package is missing</source>
        <translation>AES로 암호화된 PDF인데 cryptography 패키지가 없습니다</translation>
    </message>
    <message>
        <source>this PDF is protected by a password; open it in a PDF reader, save an unprotected copy and attach that</source>
        <translation>암호로 보호된 PDF입니다. PDF 뷰어에서 열어 보호되지 않은 사본으로 저장한 뒤 그 파일을 첨부하세요</translation>
    </message>
    <message numerus="yes">
        <source>this PDF has no text layer ({0} pages of images or blank pages); Headroom does not read scanned pages</source>
        <translation>
            <numerusform>텍스트 레이어가 없는 PDF입니다(이미지 또는 빈 페이지 {0}쪽). Headroom은 스캔한 페이지를 읽지 않습니다</numerusform>
        </translation>
    </message>
    <message>
        <source>the file has no text</source>
        <translation>텍스트가 없는 파일입니다</translation>
    </message>
    <message>
        <source>the file cannot be read ({0})</source>
        <translation>파일을 읽을 수 없습니다({0})</translation>
    </message>
    <message>
        <source>not a file that can be read</source>
        <translation>읽을 수 있는 파일이 아닙니다</translation>
    </message>
    <message>
        <source>reading was cancelled</source>
        <translation>읽기를 취소했습니다</translation>
    </message>
    <message>
        <source>this DOCX expands to more than 256 MiB of XML</source>
        <translation>압축을 풀면 XML이 256 MiB를 넘는 DOCX입니다</translation>
    </message>
</context>
<context>
    <name>Duration</name>
    <message>
        <source>{0} ms</source>
        <translation>{0} ms</translation>
    </message>
    <message>
        <source>{0} s</source>
        <translation>{0}초</translation>
    </message>
    <message>
        <source>{0} min {1} s</source>
        <translation>{0}분 {1}초</translation>
    </message>
</context>
<context>
    <name>Excepthook</name>
    <message>
        <source>The conversation database is damaged ({0}). Restart Headroom: it keeps the damaged file aside and starts a new one with the conversations that can still be read.</source>
        <translation>대화 데이터베이스가 손상되었습니다({0}). Headroom을 다시 시작하세요. 손상된 파일은 따로 보관하고, 아직 읽을 수 있는 대화로 새 데이터베이스를 시작합니다.</translation>
    </message>
</context>
<context>
    <name>FitText</name>
    <message>
        <source>fits</source>
        <translation>들어감</translation>
    </message>
    <message>
        <source>tight</source>
        <translation>빠듯함</translation>
    </message>
    <message>
        <source>does not fit</source>
        <translation>들어가지 않음</translation>
    </message>
    <message>
        <source>fits at full context</source>
        <translation>전체 컨텍스트에서 들어감</translation>
    </message>
    <message>
        <source>needs its own code to load (trust_remote_code)</source>
        <translation>불러오려면 모델 자체 코드가 필요함 (trust_remote_code)</translation>
    </message>
    <message>
        <source>pickle weights only (.bin/.pt)</source>
        <translation>pickle 가중치만 있음 (.bin/.pt)</translation>
    </message>
    <message>
        <source>no weight files in this snapshot</source>
        <translation>이 스냅샷에는 가중치 파일이 없음</translation>
    </message>
    <message>
        <source>fits with context {0}</source>
        <translation>컨텍스트 {0}까지 들어감</translation>
    </message>
    <message>
        <source>as saved ({0})</source>
        <translation>저장된 그대로 ({0})</translation>
    </message>
    <message>
        <source>{0} of {1} GPU memory free</source>
        <translation>{1} 중 {0} GPU 메모리 여유</translation>
    </message>
    <message>
        <source>{0} of {1} RAM available</source>
        <translation>{1} 중 {0} RAM 사용 가능</translation>
    </message>
    <message>
        <source>{0}, counting the open model&apos;s {1} freed on load</source>
        <translation>{0}, 새 모델을 불러올 때 비워지는 현재 모델의 {1} 포함</translation>
    </message>
    <message>
        <source>{0}: weights {1} ({2}) + KV {3} at {4} tokens = {5}; {6}</source>
        <translation>{0}: 가중치 {1} ({2}) + KV {3} ({4} 토큰 기준) = {5}; {6}</translation>
    </message>
    <message>
        <source>fits at the chosen context ({0} of {1} tokens)</source>
        <translation>선택한 컨텍스트에서 들어감 ({0} / {1} 토큰)</translation>
    </message>
    <message>
        <source>the chosen {0} tokens do not fit ({1} of {2} tokens fit)</source>
        <translation>선택한 {0} 토큰은 들어가지 않음 ({2} 토큰 중 {1} 토큰까지 들어감)</translation>
    </message>
    <message>
        <source>{0} ({1} of {2} tokens)</source>
        <translation>{0} ({1} / {2} 토큰)</translation>
    </message>
    <message>
        <source>{0} on {1}: weights {2} ({3}) + KV {4}/token ({5} at {6} tokens) + prefill at most {7} + margin {8} vs {9} free</source>
        <translation>{0}, {1}: 가중치 {2} ({3}) + KV 토큰당 {4} ({6} 토큰에서 {5}) + 프리필 최대 {7} + 안전 여유 {8}, 남은 메모리 {9}</translation>
    </message>
    <message>
        <source>{0} on {1}: weights {2} ({3}) + KV {4}/token ({5} at full context) + prefill {6} + margin {7} vs {8} free</source>
        <translation>{0}, {1}: 가중치 {2} ({3}) + KV 토큰당 {4} (전체 컨텍스트에서 {5}) + 프리필 {6} + 안전 여유 {7}, 남은 메모리 {8}</translation>
    </message>
    <message>
        <source>conversion writes {0}, {1} disk free</source>
        <translation>변환 결과 {0}, 디스크 여유 {1}</translation>
    </message>
    <message>
        <source>{0} — NOT ENOUGH DISK (needs {1})</source>
        <translation>{0} — 디스크 공간 부족 ({1} 필요)</translation>
    </message>
    <message>
        <source>with 8-bit KV the chosen {0} tokens fit</source>
        <translation>8비트 KV로는 선택한 {0} 토큰이 들어갑니다</translation>
    </message>
    <message>
        <source>with 8-bit KV {0} tokens fit</source>
        <translation>8비트 KV로는 {0}토큰이 들어갑니다</translation>
    </message>
    <message>
        <source>converted once on first open ({0} to the cache)</source>
        <translation>처음 열 때 한 번 변환됨 (캐시에 {0})</translation>
    </message>
    <message>
        <source>its config.json could not be read</source>
        <translation>config.json을 읽을 수 없음</translation>
    </message>
</context>
<context>
    <name>FoldMarker</name>
    <message>
        <source>Show summary</source>
        <translation>요약 보기</translation>
    </message>
    <message>
        <source>↑ 1 turn above is folded into the summary: the model reads the summary instead</source>
        <translation>↑ 위의 턴 1개는 요약으로 접혔습니다. 모델은 대신 요약을 읽습니다</translation>
    </message>
    <message>
        <source>↑ {0} turns above are folded into the summary: the model reads the summary instead</source>
        <translation>↑ 위의 턴 {0}개는 요약으로 접혔습니다. 모델은 대신 요약을 읽습니다</translation>
    </message>
</context>
<context>
    <name>HeadroomBadge</name>
    <message>
        <source>Memory headroom</source>
        <translation>메모리 여유</translation>
    </message>
    <message>
        <source>Headroom: no sample</source>
        <translation>여유: 측정값 없음</translation>
    </message>
    <message>
        <source>This computer&apos;s memory: turns go to the remote server, which keeps its own. Click to show or hide the memory panel.</source>
        <translation>이 컴퓨터의 메모리입니다. 답변은 원격 서버가 자체 메모리로 만듭니다. 클릭하면 메모리 패널을 보이거나 숨깁니다.</translation>
    </message>
    <message>
        <source>Memory left for the next turn. Click to show or hide the memory panel.</source>
        <translation>다음 턴에 남는 메모리입니다. 클릭하면 메모리 패널을 보이거나 숨깁니다.</translation>
    </message>
    <message>
        <source>Over by {0}</source>
        <translation>{0} 초과</translation>
    </message>
    <message>
        <source>Headroom {0} ({1:.0%})</source>
        <translation>여유 {0} ({1:.0%})</translation>
    </message>
</context>
<context>
    <name>HeadroomGauge</name>
    <message>
        <source>fits</source>
        <translation>들어감</translation>
    </message>
    <message>
        <source>tight</source>
        <translation>빠듯함</translation>
    </message>
    <message>
        <source>won&apos;t fit</source>
        <translation>들어가지 않음</translation>
    </message>
    <message>
        <source>Headroom: waiting for a sample…</source>
        <translation>여유 메모리: 측정값을 기다리는 중…</translation>
    </message>
    <message>
        <source>Headroom: no sample</source>
        <translation>여유 메모리: 측정값 없음</translation>
    </message>
    <message>
        <source>Over by {0} after this turn — {1}</source>
        <translation>이번 턴 뒤 {0} 초과 — {1}</translation>
    </message>
    <message>
        <source>Over by {0} now — {1}</source>
        <translation>현재 {0} 초과 — {1}</translation>
    </message>
    <message>
        <source>Headroom after this turn: {0} ({1}) — {2}</source>
        <translation>이번 턴 뒤 여유 메모리: {0} ({1}) — {2}</translation>
    </message>
    <message>
        <source>Headroom now: {0} ({1}) — {2}</source>
        <translation>현재 여유 메모리: {0} ({1}) — {2}</translation>
    </message>
    <message>
        <source>Free memory left at the pending turn&apos;s projected peak (plus its error bar), as a share of the device. Amber below {0}; red when the peak ± error plus the safety margin exceeds free memory — admission control would refuse the turn.</source>
        <translation>대기 중인 턴의 예측 최대치(오차 범위 포함)에서 남는 여유 메모리를 장치 전체에 대한 비율로 나타냅니다. {0} 미만이면 주황색, 최대치 ± 오차에 안전 여유를 더한 값이 여유 메모리를 넘으면 빨간색입니다 — 이때 승인 제어가 턴을 거부합니다.</translation>
    </message>
</context>
<context>
    <name>HelpMenu</name>
    <message>
        <source>Headroom runs models on the CPU instead: chatting, the memory panel and your conversations all work, only answers come more slowly and large models may not fit in memory. 4-bit models need an NVIDIA GPU with CUDA and the bitsandbytes package.</source>
        <translation>대신 Headroom은 모델을 CPU에서 실행합니다. 채팅, 메모리 패널, 대화 모두 그대로 동작하며, 답변이 느려지고 큰 모델은 메모리에 들어가지 않을 수 있을 뿐입니다. 4비트 모델에는 CUDA를 지원하는 NVIDIA GPU와 bitsandbytes 패키지가 필요합니다.</translation>
    </message>
    <message>
        <source>No NVIDIA GPU was found. {0}</source>
        <translation>NVIDIA GPU를 찾지 못했습니다. {0}</translation>
    </message>
    <message>
        <source>Your NVIDIA GPU ({0}) is not used: the installed PyTorch is a CPU-only build. Install a CUDA build of PyTorch (pytorch.org) to use it. {1}</source>
        <translation>NVIDIA GPU({0})를 사용하지 않습니다. 설치된 PyTorch가 CPU 전용 빌드이기 때문입니다. GPU를 쓰려면 CUDA 빌드 PyTorch(pytorch.org)를 설치하세요. {1}</translation>
    </message>
    <message>
        <source>Your NVIDIA driver ({0}) is too old for this PyTorch, which is built for CUDA {1} and needs driver {2} or newer, so your GPU ({3}) is not used. Update the NVIDIA driver to use it. {4}</source>
        <translation>NVIDIA 드라이버({0})가 이 PyTorch에 비해 너무 오래되었습니다. 이 PyTorch는 CUDA {1}용으로 빌드되어 드라이버 {2} 이상이 필요하므로 GPU({3})를 사용하지 않습니다. GPU를 쓰려면 NVIDIA 드라이버를 업데이트하세요. {4}</translation>
    </message>
    <message>
        <source> (driver {0})</source>
        <translation> (드라이버 {0})</translation>
    </message>
    <message>
        <source>An NVIDIA GPU ({0}) was found{1}, but CUDA could not start, so it is not used. Restarting after a driver update often fixes this; check that `nvidia-smi` works. {2}</source>
        <translation>NVIDIA GPU({0}){1}를 찾았지만 CUDA를 시작하지 못해 사용하지 않습니다. 드라이버 업데이트 후 재시작하면 대개 해결됩니다. `nvidia-smi`가 동작하는지 확인하세요. {2}</translation>
    </message>
    <message>
        <source>bitsandbytes is not installed</source>
        <translation>bitsandbytes가 설치되어 있지 않아</translation>
    </message>
    <message>
        <source>bitsandbytes {0} does not work here ({1})</source>
        <translation>bitsandbytes {0}이(가) 이 환경에서 동작하지 않아 ({1})</translation>
    </message>
    <message>
        <source>Your GPU is used, but {0}, so models load in 16-bit instead of 4-bit: they need about 3–4× the memory (an 8B model about 16 GB instead of about 5 GB), and large ones may not fit. Install it with pip install &apos;headroom[cuda]&apos; to load 4-bit models.</source>
        <translation>GPU는 사용하지만 {0} 모델을 4비트 대신 16비트로 불러옵니다. 메모리가 약 3–4배 필요하고(8B 모델이 약 5 GB 대신 약 16 GB), 큰 모델은 들어가지 않을 수 있습니다. 4비트 모델을 불러오려면 pip install &apos;headroom[cuda]&apos;로 설치하세요.</translation>
    </message>
</context>
<context>
    <name>MainWindow</name>
    <message>
        <source>Main</source>
        <translation>기본</translation>
    </message>
    <message>
        <source>Export conversation</source>
        <translation>대화 내보내기</translation>
    </message>
    <message>
        <source>Nothing to export yet: this chat has no messages.</source>
        <translation>아직 내보낼 것이 없습니다. 이 채팅에는 메시지가 없습니다.</translation>
    </message>
    <message>
        <source>Markdown (*.md)</source>
        <translation>Markdown 문서 (*.md)</translation>
    </message>
    <message>
        <source>JSON (*.json)</source>
        <translation>JSON 파일 (*.json)</translation>
    </message>
    <message>
        <source>Headroom — not saving</source>
        <translation>Headroom — 저장 안 됨</translation>
    </message>
    <message>
        <source>No answer to copy yet.</source>
        <translation>아직 복사할 답변이 없습니다.</translation>
    </message>
    <message>
        <source>Copied the last answer.</source>
        <translation>마지막 답변을 복사했습니다.</translation>
    </message>
    <message>
        <source>Save diagnostics report</source>
        <translation>진단 보고서 저장</translation>
    </message>
</context>
<context>
    <name>Memory</name>
    <message>
        <source>Could not save diagnostics to {0}: {1}</source>
        <translation>진단 보고서를 {0}에 저장하지 못했습니다: {1}</translation>
    </message>
    <message>
        <source>Diagnostics saved to {0}</source>
        <translation>진단 보고서를 {0}에 저장했습니다</translation>
    </message>
    <message>
        <source>Memory sampling stopped; the memory panel keeps its last reading. The details are in the log.</source>
        <translation>메모리 측정이 멈췄습니다. 메모리 패널은 마지막 측정값을 보여 줍니다. 세부 정보는 로그에 있습니다.</translation>
    </message>
</context>
<context>
    <name>MemoryBar</name>
    <message>
        <source>in use {0}</source>
        <translation>사용 중 {0}</translation>
    </message>
    <message>
        <source>Now</source>
        <translation>현재</translation>
    </message>
    <message>
        <source>Peak</source>
        <translation>최대</translation>
    </message>
    <message>
        <source>waiting for the first memory sample…</source>
        <translation>첫 메모리 측정값을 기다리는 중…</translation>
    </message>
    <message>
        <source>allocated ┄ reserved</source>
        <translation>할당 ┄ 예약</translation>
    </message>
    <message>
        <source>allocated = reserved</source>
        <translation>할당 = 예약</translation>
    </message>
    <message>
        <source>no turn running</source>
        <translation>실행 중인 턴 없음</translation>
    </message>
    <message>
        <source>full ctx</source>
        <translation>전체 컨텍스트</translation>
    </message>
    <message>
        <source>what if</source>
        <translation>가정</translation>
    </message>
    <message>
        <source>In use now: {0}</source>
        <translation>현재 사용 중: {0}</translation>
    </message>
    <message>
        <source>Free after this turn: {0}</source>
        <translation>이번 턴 뒤 여유: {0}</translation>
    </message>
    <message>
        <source>Safety margin kept free: {0}</source>
        <translation>비워 두는 안전 여유: {0}</translation>
    </message>
    <message>
        <source>KV at full context: {0}</source>
        <translation>전체 컨텍스트의 KV: {0}</translation>
    </message>
    <message>
        <source>What-if peak: +{0} on top of what is in use</source>
        <translation>가정한 최대치: 사용 중인 메모리 위에 +{0}</translation>
    </message>
</context>
<context>
    <name>MemoryTerms</name>
    <message>
        <source>Weights</source>
        <translation>가중치</translation>
    </message>
    <message>
        <source>Weights (in RSS)</source>
        <translation>가중치 (RSS에 포함)</translation>
    </message>
    <message>
        <source>Parameters and buffers of the loaded model as allocated after load, bytes (LoadReport.weight_bytes, from get_memory_footprint).</source>
        <translation>불러온 뒤 할당된 모델의 파라미터와 버퍼, 바이트 (LoadReport.weight_bytes, get_memory_footprint 기준).</translation>
    </message>
    <message>
        <source>Parameters and buffers of the loaded model, bytes; on CPU they are part of the process RSS (LoadReport.weight_bytes, from get_memory_footprint).</source>
        <translation>불러온 모델의 파라미터와 버퍼, 바이트. CPU에서는 프로세스 RSS의 일부입니다 (LoadReport.weight_bytes, get_memory_footprint 기준).</translation>
    </message>
    <message>
        <source>KV cache &amp; live tensors</source>
        <translation>KV 캐시와 사용 중인 텐서</translation>
    </message>
    <message>
        <source>Rest of our RSS (KV, runtime)</source>
        <translation>나머지 RSS (KV, 런타임)</translation>
    </message>
    <message>
        <source>allocated − weights, bytes: the conversation&apos;s KV cache plus working buffers right now (torch.cuda.memory_allocated, sampled ≈4 Hz).</source>
        <translation>할당 − 가중치, 바이트: 지금 대화의 KV 캐시와 작업 버퍼 (torch.cuda.memory_allocated, 약 4 Hz 측정).</translation>
    </message>
    <message>
        <source>process RSS − weights, bytes: KV cache, activations and the Python/torch runtime (psutil memory_info().rss, sampled ≈4 Hz).</source>
        <translation>프로세스 RSS − 가중치, 바이트: KV 캐시, 활성값, Python/torch 런타임 (psutil memory_info().rss, 약 4 Hz 측정).</translation>
    </message>
    <message>
        <source>KV at end of turn (projected)</source>
        <translation>턴 종료 시 KV (예측)</translation>
    </message>
    <message>
        <source>KV cache once the pending turn has run to max_new_tokens, bytes; in brackets what the turn adds (history + prompt + max_new_tokens beyond what is cached). Per token: Σ layers 2 × KV heads × head_dim × bytes per element, sliding layers capped at their window (app.engine.memory.kv_layout.kv_cache_bytes).</source>
        <translation>대기 중인 턴이 max_new_tokens까지 실행된 뒤의 KV 캐시, 바이트. 괄호 안은 이번 턴이 더하는 양(캐시된 부분을 넘는 기록 + 프롬프트 + max_new_tokens)입니다. 토큰당: Σ 레이어 2 × KV 헤드 × head_dim × 원소당 바이트, 슬라이딩 레이어는 윈도 크기까지 (app.engine.memory.kv_layout.kv_cache_bytes).</translation>
    </message>
    <message>
        <source>KV cache once the pending turn has run to max_new_tokens, bytes; in brackets what the turn adds. Per token: Σ layers 2 × KV heads × head_dim × bytes per element (app.engine.memory.kv_layout.kv_cache_bytes).</source>
        <translation>대기 중인 턴이 max_new_tokens까지 실행된 뒤의 KV 캐시, 바이트. 괄호 안은 이번 턴이 더하는 양입니다. 토큰당: Σ 레이어 2 × KV 헤드 × head_dim × 원소당 바이트 (app.engine.memory.kv_layout.kv_cache_bytes).</translation>
    </message>
    <message>
        <source>Prefill spike (projected)</source>
        <translation>프리필 급증분 (예측)</translation>
    </message>
    <message>
        <source>Transient activations of the worst prefill chunk (MLP/attention workspace, mask, logits), bytes, × the correction measured on earlier turns (max_memory_allocated). Gone after prefill; the ± error bar (bytes) comes from how far recent projections were off.</source>
        <translation>가장 큰 프리필 청크의 일시적 활성값(MLP/어텐션 작업 공간, 마스크, 로짓), 바이트, × 이전 턴에서 측정한 보정값(max_memory_allocated). 프리필이 끝나면 사라집니다. ± 오차 범위(바이트)는 최근 예측이 빗나간 정도에서 나옵니다.</translation>
    </message>
    <message>
        <source>Transient activations of the worst prefill chunk, bytes, × the correction measured on earlier turns (peak RSS). Gone after prefill; ± is the largest recent projection error.</source>
        <translation>가장 큰 프리필 청크의 일시적 활성값, 바이트, × 이전 턴에서 측정한 보정값(최대 RSS). 프리필이 끝나면 사라집니다. ±는 최근 예측 오차 중 가장 큰 값입니다.</translation>
    </message>
    <message>
        <source>KV at full context</source>
        <translation>전체 컨텍스트의 KV</translation>
    </message>
    <message>
        <source>KV cache if the conversation fills the whole context window, bytes (dashed marker on the &apos;Peak&apos; row: where the bar would end).</source>
        <translation>대화가 컨텍스트 창 전체를 채웠을 때의 KV 캐시, 바이트 (‘최대’ 행의 점선 표시: 막대가 끝날 위치).</translation>
    </message>
    <message>
        <source>Fragmentation / cached (reserved − allocated)</source>
        <translation>단편화 / 캐시 (예약 − 할당)</translation>
    </message>
    <message>
        <source>reserved − allocated, bytes: held by PyTorch&apos;s caching allocator but by no tensor. PyTorch can reuse it, other programs cannot; fragmented blocks may fail a large allocation while memory looks free (torch.cuda.memory_reserved − memory_allocated).</source>
        <translation>예약 − 할당, 바이트: PyTorch 캐싱 할당자가 잡고 있지만 어떤 텐서도 쓰지 않는 메모리. PyTorch는 재사용할 수 있지만 다른 프로그램은 쓸 수 없습니다. 단편화된 블록 때문에 메모리가 비어 보여도 큰 할당이 실패할 수 있습니다 (torch.cuda.memory_reserved − memory_allocated).</translation>
    </message>
    <message>
        <source>Other processes</source>
        <translation>다른 프로세스</translation>
    </message>
    <message>
        <source>Other programs</source>
        <translation>다른 프로그램</translation>
    </message>
    <message>
        <source>Other programs&apos; use of this GPU, bytes (NVML via nvidia-ml-py). &apos;unknown&apos; without NVML: then it is counted in CUDA context / overhead.</source>
        <translation>다른 프로그램이 이 GPU에서 쓰는 메모리, 바이트 (nvidia-ml-py를 통한 NVML). NVML이 없으면 ‘알 수 없음’이며, 이때는 CUDA 컨텍스트 / 오버헤드에 포함됩니다.</translation>
    </message>
    <message>
        <source>System memory used by everything but this process, bytes: total − available − our RSS (psutil.virtual_memory; inside a container, its memory limit is the total).</source>
        <translation>이 프로세스를 뺀 나머지가 쓰는 시스템 메모리, 바이트: 전체 − 사용 가능 − 이 프로세스의 RSS (psutil.virtual_memory; 컨테이너 안에서는 그 메모리 제한이 전체입니다).</translation>
    </message>
    <message>
        <source>Memory the OS can hand out without swapping, bytes (psutil.virtual_memory().available; inside a container, no more than its memory limit less what it uses).</source>
        <translation>운영체제가 스왑 없이 내줄 수 있는 메모리, 바이트 (psutil.virtual_memory().available; 컨테이너 안에서는 메모리 제한에서 이미 쓰는 양을 뺀 것보다 많지 않습니다).</translation>
    </message>
    <message>
        <source>CUDA context / overhead</source>
        <translation>CUDA 컨텍스트 / 오버헤드</translation>
    </message>
    <message>
        <source>(total − free) − reserved − other processes, bytes: the CUDA context, cuBLAS/cuDNN workspaces and libraries (torch.cuda.mem_get_info).</source>
        <translation>(전체 − 여유) − 예약 − 다른 프로세스, 바이트: CUDA 컨텍스트, cuBLAS/cuDNN 작업 공간과 라이브러리 (torch.cuda.mem_get_info).</translation>
    </message>
    <message>
        <source>Free</source>
        <translation>여유</translation>
    </message>
    <message>
        <source>Available</source>
        <translation>사용 가능</translation>
    </message>
    <message>
        <source>Free memory the driver reports, bytes (torch.cuda.mem_get_info). Reserved-but-unused memory is not counted as free (fragmentation: reserved is not free, dolly #79).</source>
        <translation>드라이버가 알려 주는 여유 메모리, 바이트 (torch.cuda.mem_get_info). 예약되었지만 쓰지 않는 메모리는 여유로 치지 않습니다 (단편화: 예약은 여유가 아님, dolly #79).</translation>
    </message>
    <message>
        <source>Safety margin (kept free)</source>
        <translation>안전 여유 (비워 둠)</translation>
    </message>
    <message>
        <source>Memory a turn must leave free at its peak, bytes: the larger of 256 MiB and 2 % of the device (admission.safety_margin); the cross-hatched end of the Peak row.</source>
        <translation>한 턴이 최대 사용 시점에도 비워 두어야 하는 메모리, 바이트: 256 MiB와 장치의 2 % 중 큰 값 (admission.safety_margin); ‘최대’ 행 끝의 격자 빗금 부분.</translation>
    </message>
    <message>
        <source>Memory a turn must leave free at its peak, bytes: the larger of 256 MiB and 2 % of system memory (admission.safety_margin); the cross-hatched end of the Peak row.</source>
        <translation>한 턴이 최대 사용 시점에도 비워 두어야 하는 메모리, 바이트: 256 MiB와 시스템 메모리의 2 % 중 큰 값 (admission.safety_margin); ‘최대’ 행 끝의 격자 빗금 부분.</translation>
    </message>
</context>
<context>
    <name>MemoryTimeline</name>
    <message>
        <source>allocated</source>
        <translation>할당</translation>
    </message>
    <message>
        <source>reserved</source>
        <translation>예약</translation>
    </message>
    <message>
        <source>projected peak</source>
        <translation>예측 최대치</translation>
    </message>
    <message>
        <source>limit (reserved + free)</source>
        <translation>한도 (예약 + 여유)</translation>
    </message>
    <message>
        <source>seconds before now</source>
        <translation>현재로부터 몇 초 전</translation>
    </message>
    <message>
        <source>limit (RSS + available)</source>
        <translation>한도 (RSS + 사용 가능)</translation>
    </message>
    <message>
        <source>GiB against seconds before now, sampled ≈4 Hz, drawn once a second.</source>
        <translation>현재로부터의 초 단위 시간에 따른 GiB, 약 4 Hz로 측정하고 1초마다 그립니다.</translation>
    </message>
    <message>
        <source>allocated: live tensors; reserved: held by the caching allocator; projected peak: the pending turn&apos;s; limit: what allocated can reach (reserved + driver-free).</source>
        <translation>할당: 사용 중인 텐서, 예약: 캐싱 할당자가 잡고 있는 메모리, 예측 최대치: 대기 중인 턴의 최대치, 한도: 할당이 도달할 수 있는 최대 (예약 + 드라이버 기준 여유).</translation>
    </message>
    <message>
        <source>RSS: this process&apos;s resident memory; projected peak: the pending turn&apos;s; limit: what RSS can reach (RSS + available system memory).</source>
        <translation>RSS: 이 프로세스의 상주 메모리, 예측 최대치: 대기 중인 턴의 최대치, 한도: RSS가 도달할 수 있는 최대 (RSS + 사용 가능한 시스템 메모리).</translation>
    </message>
</context>
<context>
    <name>MessageBubble</name>
    <message>
        <source>You</source>
        <translation>나</translation>
    </message>
    <message>
        <source>Assistant</source>
        <translation>어시스턴트</translation>
    </message>
    <message>
        <source>System</source>
        <translation>시스템</translation>
    </message>
    <message>
        <source>stopped</source>
        <translation>중지됨</translation>
    </message>
    <message>
        <source>failed</source>
        <translation>실패</translation>
    </message>
    <message>
        <source>{0} message</source>
        <translation>{0} 메시지</translation>
    </message>
    <message>
        <source>Message text</source>
        <translation>메시지 내용</translation>
    </message>
    <message>
        <source>Edit</source>
        <translation>편집</translation>
    </message>
    <message>
        <source>Edit this message and get a new answer from here</source>
        <translation>이 메시지를 고치고 여기서부터 새 답변 받기</translation>
    </message>
    <message>
        <source>Continue</source>
        <translation>이어 쓰기</translation>
    </message>
    <message>
        <source>Continue this answer from where it ended</source>
        <translation>멈춘 곳부터 이 답변 이어 쓰기</translation>
    </message>
    <message>
        <source>Regenerate</source>
        <translation>다시 생성</translation>
    </message>
    <message>
        <source>Write a new version of this answer (the old one stays)</source>
        <translation>이 답변의 새 버전을 씁니다(이전 버전은 남습니다)</translation>
    </message>
    <message>
        <source>More actions for this message</source>
        <translation>이 메시지에 대한 다른 작업</translation>
    </message>
    <message>
        <source>More actions</source>
        <translation>다른 작업</translation>
    </message>
    <message>
        <source>Copy</source>
        <translation>복사</translation>
    </message>
    <message>
        <source>Copy this message as you typed it</source>
        <translation>이 메시지를 입력한 그대로 복사합니다</translation>
    </message>
    <message>
        <source>Copy this message as Markdown, as it was written</source>
        <translation>이 메시지를 쓰인 그대로 Markdown으로 복사합니다</translation>
    </message>
    <message>
        <source>Branch into a new chat</source>
        <translation>새 채팅으로 분기</translation>
    </message>
    <message>
        <source>Continue from this message in a chat of its own</source>
        <translation>이 메시지부터 별도의 채팅에서 이어 갑니다</translation>
    </message>
    <message>
        <source>Pin to notes</source>
        <translation>메모에 고정</translation>
    </message>
    <message>
        <source>Keep this message in every prompt of this chat</source>
        <translation>이 메시지를 이 채팅의 모든 프롬프트에 넣습니다</translation>
    </message>
    <message>
        <source>Show the previous version</source>
        <translation>이전 버전 보기</translation>
    </message>
    <message>
        <source>Show the next version</source>
        <translation>다음 버전 보기</translation>
    </message>
    <message numerus="yes">
        <source>Reading the prompt… {0} / {1} tokens</source>
        <translation>
            <numerusform>프롬프트 읽는 중… {0} / {1} 토큰</numerusform>
        </translation>
    </message>
    <message>
        <source>(no answer)</source>
        <translation>(답변 없음)</translation>
    </message>
    <message numerus="yes">
        <source>… {0} more characters not shown here (the whole answer is kept: Copy and Export take all of it)</source>
        <translation>
            <numerusform>… 여기에 표시하지 않은 글자 {0}자 (답변 전체는 보존되며, 복사와 내보내기에는 모두 담깁니다)</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>… {0} more characters not shown here (the whole message is kept, but it was not sent)</source>
        <translation>
            <numerusform>… 여기에 표시하지 않은 글자 {0}자 (메시지 전체는 보존되지만 전송되지 않았습니다)</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>… {0} more characters not shown here (the whole message is kept and sent)</source>
        <translation>
            <numerusform>… 여기에 표시하지 않은 글자 {0}자 (메시지 전체는 보존되고 전송됩니다)</numerusform>
        </translation>
    </message>
    <message>
        <source>The answers below stay as the older version. {0}</source>
        <translation>아래 답변들은 이전 버전으로 남습니다. {0}</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>취소</translation>
    </message>
    <message>
        <source>Save &amp;&amp; regenerate</source>
        <translation>저장 후 다시 생성</translation>
    </message>
    <message>
        <source>(no text)</source>
        <translation>(내용 없음)</translation>
    </message>
    <message>
        <source>{0} — {1}: {2}</source>
        <translation>{0} — {1}: {2}</translation>
    </message>
    <message>
        <source>{0} — {1}</source>
        <translation>{0} — {1}</translation>
    </message>
    <message>
        <source>Version {0} of {1}</source>
        <translation>버전 {0} / {1}</translation>
    </message>
    <message>
        <source>Ctrl+Enter to save · Esc to cancel</source>
        <translation>Ctrl+Enter로 저장 · Esc로 취소</translation>
    </message>
</context>
<context>
    <name>ModelStatusBar</name>
    <message>
        <source>no CUDA device: running on the CPU in float32</source>
        <translation>CUDA 장치 없음: CPU에서 float32로 실행</translation>
    </message>
    <message>
        <source>no chat template (a base model?): prompts use a plain User/Assistant transcript</source>
        <translation>채팅 템플릿 없음(기본 모델?): 프롬프트는 단순한 User/Assistant 대화록 형식</translation>
    </message>
    <message>
        <source>folder carries its own quantization_config: honoured as saved</source>
        <translation>폴더에 자체 quantization_config가 있음: 저장된 그대로 사용</translation>
    </message>
    <message>
        <source>flash_attention_2 loaded but Headroom&apos;s static-cache FA2 path is not active</source>
        <translation>flash_attention_2는 로드됐지만 Headroom의 정적 캐시 FA2 경로는 꺼져 있음</translation>
    </message>
    <message>
        <source>No model loaded</source>
        <translation>불러온 모델 없음</translation>
    </message>
    <message>
        <source>Model loading progress</source>
        <translation>모델 불러오기 진행률</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>취소</translation>
    </message>
    <message>
        <source>Stop loading this model</source>
        <translation>이 모델 불러오기를 멈춥니다</translation>
    </message>
    <message>
        <source>{0} weights</source>
        <translation>가중치 {0}</translation>
    </message>
    <message>
        <source>chat template broken</source>
        <translation>채팅 템플릿 손상됨</translation>
    </message>
    <message>
        <source>no chat template</source>
        <translation>채팅 템플릿 없음</translation>
    </message>
    <message>
        <source>• best path active</source>
        <translation>• 최적 경로 사용 중</translation>
    </message>
    <message>
        <source>{0}
attention: {1}
quantization: {2}
weights: {3}, compute: {4}
loaded in {5} s
{6}</source>
        <translation>{0}
어텐션: {1}
양자화: {2}
가중치: {3}, 연산: {4}
불러오는 데 {5}초
{6}</translation>
    </message>
    <message>
        <source>none</source>
        <translation>없음</translation>
    </message>
    <message>
        <source>Remote: {0}</source>
        <translation>원격: {0}</translation>
    </message>
    <message>
        <source>context {0} tokens</source>
        <translation>컨텍스트 {0} 토큰</translation>
    </message>
    <message>
        <source>This chat&apos;s turns are answered by {0}.</source>
        <translation>이 채팅의 답변은 {0}에서 옵니다.</translation>
    </message>
    <message>
        <source>model: {0}</source>
        <translation>모델: {0}</translation>
    </message>
    <message>
        <source>context: {0} tokens ({1})</source>
        <translation>컨텍스트: {0} 토큰 ({1})</translation>
    </message>
    <message>
        <source>tokens counted by {0}: {1}</source>
        <translation>토큰 계산 방식 {0}: {1}</translation>
    </message>
    <message>
        <source>Local model (not answering here): {0}</source>
        <translation>로컬 모델 (이 채팅에서는 답하지 않음): {0}</translation>
    </message>
    <message>
        <source>No local model loaded</source>
        <translation>로드된 로컬 모델 없음</translation>
    </message>
    <message>
        <source>answered by local model</source>
        <translation>로컬 모델 답변</translation>
    </message>
    <message>
        <source>16-bit</source>
        <translation>16비트</translation>
    </message>
    <message>
        <source>8-bit</source>
        <translation>8비트</translation>
    </message>
    <message>
        <source>optimizing decode for {0} KV…</source>
        <translation>{0} KV 디코드 최적화 중…</translation>
    </message>
    <message>
        <source>{0} (compile failed)</source>
        <translation>{0} (컴파일 실패)</translation>
    </message>
    <message>
        <source>no CUDA device: decode runs eagerly (CUDA graphs need a GPU)</source>
        <translation>CUDA 장치 없음: 디코드는 컴파일되지 않은 채 실행됩니다 (CUDA 그래프에는 GPU가 필요합니다)</translation>
    </message>
    <message>
        <source>no tokens</source>
        <translation>토큰 없음</translation>
    </message>
    <message numerus="yes">
        <source>TTFT {0} · {1} tokens</source>
        <translation>
            <numerusform>TTFT {0} · {1} 토큰</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>TTFT {0} · {1} tok/s · {2} tokens</source>
        <translation>
            <numerusform>TTFT {0} · 초당 {1} 토큰 · {2} 토큰</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>Models</name>
    <message>
        <source>The model used last is no longer at {0}; opening the default model.</source>
        <translation>마지막으로 쓴 모델이 더 이상 {0}에 없습니다. 기본 모델을 엽니다.</translation>
    </message>
    <message>
        <source>The default model is no longer at {0}. Run `python -m app.install_model` to install it again, or open a model with Open model…</source>
        <translation>기본 모델이 더 이상 {0}에 없습니다. `python -m app.install_model`을 실행해 다시 설치하거나 모델 열기…로 모델을 여세요.</translation>
    </message>
    <message>
        <source>The default model is not installed yet ({0}). Run `python -m app.install_model`, or open a model with Open model…</source>
        <translation>기본 모델이 아직 설치되지 않았습니다({0}). `python -m app.install_model`을 실행하거나 모델 열기…로 모델을 여세요.</translation>
    </message>
    <message>
        <source>The model used last is no longer at {0}.</source>
        <translation>마지막으로 쓴 모델이 더 이상 {0}에 없습니다.</translation>
    </message>
    <message>
        <source>Max new tokens ({0}) is more than this model&apos;s {1}-token context can hold beside a message, so its answers get at most {2} tokens and the conversation keeps {3}. Your setting stays {0} for models with more context.</source>
        <translation>최대 새 토큰 수({0})가 이 모델의 {1} 토큰 컨텍스트에 메시지와 함께 담기에는 너무 큽니다. 그래서 이 모델의 답변은 최대 {2} 토큰이고, 대화에는 {3} 토큰이 남습니다. 설정값({0})은 그대로 두며, 컨텍스트가 더 큰 모델에서는 다시 적용됩니다.</translation>
    </message>
    <message>
        <source>Cancelling after the current step…</source>
        <translation>현재 단계가 끝나면 취소합니다…</translation>
    </message>
    <message>
        <source>Loading {0}…</source>
        <translation>{0} 불러오는 중…</translation>
    </message>
    <message>
        <source>{0}: {1}</source>
        <translation>{0}: {1}</translation>
    </message>
    <message>
        <source>Reopening {0}.</source>
        <translation>{0}을(를) 다시 엽니다.</translation>
    </message>
    <message>
        <source>The chat template of {0} is broken, so Headroom set it aside: its prompts are written as a plain User / Assistant transcript, and its answers may be worse than they should be. A fixed copy of the model answers better. ({1})</source>
        <translation>{0}의 채팅 템플릿이 손상되어 Headroom이 사용하지 않았습니다: 프롬프트를 일반 User / Assistant 대화록 형식으로 쓰므로 답변이 본래보다 나쁠 수 있습니다. 고쳐진 모델 사본이 더 잘 답합니다. ({1})</translation>
    </message>
    <message>
        <source>{0} has no chat template (a base model?): its prompts are written as a plain User / Assistant transcript, and its answers may ramble or carry on as the user. A chat (instruct) model answers better.</source>
        <translation>{0}에는 채팅 템플릿이 없습니다(기본 모델인가요?). 프롬프트를 단순한 User / Assistant 대화록으로 쓰므로 답변이 장황하거나 사용자 역할까지 이어 쓸 수 있습니다. 채팅(instruct) 모델이 더 잘 답합니다.</translation>
    </message>
    <message>
        <source>Loading cancelled.</source>
        <translation>불러오기를 취소했습니다.</translation>
    </message>
</context>
<context>
    <name>NoteProposals</name>
    <message>
        <source>The summary suggests keeping these as pinned notes:</source>
        <translation>요약이 다음 내용을 고정 메모로 두자고 제안합니다:</translation>
    </message>
    <message>
        <source>Dismiss all</source>
        <translation>모두 무시</translation>
    </message>
    <message>
        <source>Pin none of these; they are not suggested again in this chat</source>
        <translation>아무것도 고정하지 않습니다. 이 채팅에서 다시 제안되지 않습니다</translation>
    </message>
    <message>
        <source>Pin</source>
        <translation>고정</translation>
    </message>
    <message>
        <source>Keep this in every prompt of this chat</source>
        <translation>이 대화의 모든 프롬프트에 넣어 둡니다</translation>
    </message>
    <message>
        <source>Pin: {0}</source>
        <translation>고정: {0}</translation>
    </message>
    <message>
        <source>Dismiss</source>
        <translation>무시</translation>
    </message>
    <message>
        <source>Do not pin this; it is not suggested again in this chat</source>
        <translation>고정하지 않습니다. 이 대화에서 다시 제안하지 않습니다</translation>
    </message>
    <message>
        <source>Dismiss: {0}</source>
        <translation>무시: {0}</translation>
    </message>
    <message numerus="yes">
        <source>%n more after these</source>
        <translation>
            <numerusform>이 밖에 %n개 더</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>NotesDialog</name>
    <message>
        <source>Pinned notes</source>
        <translation>고정 메모</translation>
    </message>
    <message>
        <source>Kept in every prompt of this chat, after the system prompt, however long the chat grows. They take room in the context window.</source>
        <translation>채팅이 아무리 길어져도 이 채팅의 모든 프롬프트에 시스템 프롬프트 다음으로 들어갑니다. 컨텍스트 창의 자리를 차지합니다.</translation>
    </message>
    <message>
        <source>e.g. My name is Ada. Answer in metric units.</source>
        <translation>예: 제 이름은 에이다입니다. 미터법 단위로 답해 주세요.</translation>
    </message>
    <message>
        <source>≈ {0} tokens in every prompt</source>
        <translation>모든 프롬프트에 ≈ {0} 토큰</translation>
    </message>
    <message>
        <source>No notes: nothing extra in the prompt</source>
        <translation>메모 없음: 프롬프트에 추가되는 것이 없습니다</translation>
    </message>
</context>
<context>
    <name>OpenModelDialog</name>
    <message>
        <source>Model</source>
        <translation>모델</translation>
    </message>
    <message>
        <source>Found in</source>
        <translation>찾은 곳</translation>
    </message>
    <message>
        <source>On disk</source>
        <translation>디스크</translation>
    </message>
    <message>
        <source>Needs</source>
        <translation>필요</translation>
    </message>
    <message>
        <source>Fit</source>
        <translation>적합</translation>
    </message>
    <message>
        <source>recent</source>
        <translation>최근</translation>
    </message>
    <message>
        <source>default</source>
        <translation>기본</translation>
    </message>
    <message>
        <source>HF cache</source>
        <translation>HF 캐시</translation>
    </message>
    <message>
        <source>chosen</source>
        <translation>직접 선택</translation>
    </message>
    <message>
        <source>Open model</source>
        <translation>모델 열기</translation>
    </message>
    <message>
        <source>This machine: {0} ({1})</source>
        <translation>이 컴퓨터: {0} ({1})</translation>
    </message>
    <message>
        <source>Model file…</source>
        <translation>모델 파일…</translation>
    </message>
    <message>
        <source>A .gguf file, or any file inside a model folder (config.json, *.safetensors): that folder is added.</source>
        <translation>.gguf 파일, 또는 모델 폴더 안의 아무 파일(config.json, *.safetensors): 그 폴더가 추가됩니다.</translation>
    </message>
    <message>
        <source>Model folder…</source>
        <translation>모델 폴더…</translation>
    </message>
    <message>
        <source>A Hugging Face model folder: config.json with its *.safetensors weights.</source>
        <translation>Hugging Face 모델 폴더: config.json과 *.safetensors 가중치가 든 폴더.</translation>
    </message>
    <message>
        <source>✕ damaged</source>
        <translation>✕ 손상됨</translation>
    </message>
    <message>
        <source>Reading the model&apos;s header and planning its fit…</source>
        <translation>모델 헤더를 읽고 메모리 적합성을 계획하는 중…</translation>
    </message>
    <message>
        <source>Memory fit not known.</source>
        <translation>메모리 적합성을 알 수 없습니다.</translation>
    </message>
    <message>
        <source>Open model file</source>
        <translation>모델 파일 열기</translation>
    </message>
    <message>
        <source>Models (*.gguf config.json *.safetensors);;GGUF models (*.gguf);;All files (*)</source>
        <translation>모델 (*.gguf config.json *.safetensors);;GGUF 모델 (*.gguf);;모든 파일 (*)</translation>
    </message>
    <message>
        <source>Open model folder</source>
        <translation>모델 폴더 열기</translation>
    </message>
    <message>
        <source>Run this model&apos;s own code</source>
        <translation>이 모델 자체 코드 실행</translation>
    </message>
    <message>
        <source>Needs = the weights as they would load here + the KV cache of the model&apos;s context (auto: the largest that fits). “tight” leaves too little room for long prompts; “does not fit” will not load or will run out of memory.</source>
        <translation>필요량 = 이 컴퓨터에서 불러올 가중치 + 모델 컨텍스트의 KV 캐시(자동: 들어가는 가장 큰 값). “빠듯함”은 긴 프롬프트를 위한 여유가 부족하고, “들어가지 않음”은 불러오지 못하거나 메모리가 부족해집니다.</translation>
    </message>
    <message>
        <source>Looking for models on this machine…</source>
        <translation>이 컴퓨터에서 모델을 찾는 중…</translation>
    </message>
    <message>
        <source>Runs Python files shipped with this model when it loads. Only for models from a source you trust.</source>
        <translation>모델을 불러올 때 함께 제공된 Python 파일을 실행합니다. 신뢰하는 출처의 모델에만 쓰세요.</translation>
    </message>
    <message>
        <source>Allow pickle weights (.bin / .pt) for this model</source>
        <translation>이 모델에 pickle 가중치(.bin / .pt) 허용</translation>
    </message>
    <message>
        <source>Pickle files can run arbitrary code when loaded. Safetensors are always used when the folder has them.</source>
        <translation>pickle 파일은 불러올 때 임의의 코드를 실행할 수 있습니다. 폴더에 safetensors가 있으면 항상 그것을 씁니다.</translation>
    </message>
    <message>
        <source>reading…</source>
        <translation>읽는 중…</translation>
    </message>
    <message>
        <source>✕ cannot open</source>
        <translation>✕ 열 수 없음</translation>
    </message>
    <message>
        <source>unknown</source>
        <translation>알 수 없음</translation>
    </message>
    <message>
        <source>Plan: {0}</source>
        <translation>계획: {0}</translation>
    </message>
    <message>
        <source>Note: {0}.</source>
        <translation>참고: {0}.</translation>
    </message>
    <message>
        <source>No models found on this machine yet. Use “Model file…” to pick a .gguf file, or “Model folder…” to pick a model folder.</source>
        <translation>이 컴퓨터에서 아직 모델을 찾지 못했습니다. “모델 파일…”로 .gguf 파일을, “모델 폴더…”로 모델 폴더를 고르세요.</translation>
    </message>
    <message>
        <source>Could not look for models: {0}</source>
        <translation>모델을 찾지 못했습니다: {0}</translation>
    </message>
</context>
<context>
    <name>PlainError</name>
    <message>
        <source>Headroom could not reach the server.</source>
        <translation>Headroom이 서버에 연결하지 못했습니다.</translation>
    </message>
    <message>
        <source>The server did not answer in time.</source>
        <translation>서버가 제시간에 응답하지 않았습니다.</translation>
    </message>
    <message>
        <source>The server refused the API key.</source>
        <translation>서버가 API 키를 거부했습니다.</translation>
    </message>
    <message>
        <source>The server does not know this model or address.</source>
        <translation>서버가 이 모델이나 주소를 알지 못합니다.</translation>
    </message>
    <message>
        <source>The server found the prompt too long for its context.</source>
        <translation>서버가 프롬프트가 컨텍스트보다 길다고 판단했습니다.</translation>
    </message>
    <message>
        <source>The server is busy.</source>
        <translation>서버가 바쁩니다.</translation>
    </message>
    <message>
        <source>The server failed while answering.</source>
        <translation>서버가 답변하는 도중 실패했습니다.</translation>
    </message>
    <message>
        <source>The server&apos;s answer was not understood.</source>
        <translation>서버의 응답을 이해하지 못했습니다.</translation>
    </message>
    <message>
        <source>Start the server, or fix its address in Settings.</source>
        <translation>서버를 시작하거나 설정에서 주소를 고치세요.</translation>
    </message>
    <message>
        <source>The server may be busy or down; try again, or check it.</source>
        <translation>서버가 바쁘거나 꺼져 있을 수 있습니다. 다시 시도하거나 서버를 확인하세요.</translation>
    </message>
    <message>
        <source>Check the API key in Settings.</source>
        <translation>설정에서 API 키를 확인하세요.</translation>
    </message>
    <message>
        <source>Check the model name and the address in Settings.</source>
        <translation>설정에서 모델 이름과 주소를 확인하세요.</translation>
    </message>
    <message>
        <source>Start a new chat or send a shorter message.</source>
        <translation>새 채팅을 시작하거나 더 짧은 메시지를 보내세요.</translation>
    </message>
    <message>
        <source>Try again in a moment.</source>
        <translation>잠시 후 다시 시도하세요.</translation>
    </message>
    <message>
        <source>Try again; if it keeps failing, look at the server&apos;s log.</source>
        <translation>다시 시도하세요. 계속 실패하면 서버 로그를 확인하세요.</translation>
    </message>
    <message>
        <source>The address may not be an OpenAI-compatible server; check it in Settings.</source>
        <translation>이 주소가 OpenAI 호환 서버가 아닐 수 있습니다. 설정에서 확인하세요.</translation>
    </message>
    <message>
        <source>The details are in the log (Help → About shows its folder).</source>
        <translation>세부 정보는 로그에 있습니다 (도움말 → 정보에서 로그 폴더를 볼 수 있습니다).</translation>
    </message>
    <message>
        <source>There is not enough memory to load this model.</source>
        <translation>이 모델을 불러올 메모리가 부족합니다.</translation>
    </message>
    <message>
        <source>Close other programs, or open a smaller or 4-bit model.</source>
        <translation>다른 프로그램을 닫거나 더 작은 모델 또는 4비트 모델을 여세요.</translation>
    </message>
    <message>
        <source>The model ran out of memory during this answer.</source>
        <translation>답변하는 도중 모델의 메모리가 부족해졌습니다.</translation>
    </message>
    <message>
        <source>Send a shorter message, lower max new tokens in Settings, or start a new chat.</source>
        <translation>더 짧은 메시지를 보내거나, 설정에서 최대 새 토큰 수를 낮추거나, 새 채팅을 시작하세요.</translation>
    </message>
    <message>
        <source>This model&apos;s architecture is not supported by the installed transformers.</source>
        <translation>설치된 transformers가 이 모델의 아키텍처를 지원하지 않습니다.</translation>
    </message>
    <message>
        <source>Open a model of a supported family (Llama, Mistral, Qwen, Gemma, Phi …).</source>
        <translation>지원되는 계열의 모델(Llama, Mistral, Qwen, Gemma, Phi …)을 여세요.</translation>
    </message>
    <message>
        <source>This GGUF file could not be read.</source>
        <translation>이 GGUF 파일을 읽지 못했습니다.</translation>
    </message>
    <message>
        <source>The file may be incomplete or damaged; download it again.</source>
        <translation>파일이 불완전하거나 손상되었을 수 있습니다. 다시 내려받으세요.</translation>
    </message>
    <message>
        <source>The weights file {0} could not be read.</source>
        <translation>가중치 파일({0})을 읽지 못했습니다.</translation>
    </message>
    <message>
        <source>A weights file of this model could not be read.</source>
        <translation>이 모델의 가중치 파일을 읽지 못했습니다.</translation>
    </message>
    <message>
        <source>A file Headroom needs is missing: {0}.</source>
        <translation>Headroom에 필요한 파일이 없습니다: {0}.</translation>
    </message>
    <message>
        <source>Check that the folder or drive is still there.</source>
        <translation>폴더나 드라이브가 아직 있는지 확인하세요.</translation>
    </message>
    <message>
        <source>Headroom may not read or write {0}.</source>
        <translation>Headroom이 {0}을(를) 읽거나 쓸 권한이 없습니다.</translation>
    </message>
    <message>
        <source>Check the file&apos;s permissions.</source>
        <translation>파일 권한을 확인하세요.</translation>
    </message>
    <message>
        <source>The disk is full.</source>
        <translation>디스크가 가득 찼습니다.</translation>
    </message>
    <message>
        <source>Free some space, then try again.</source>
        <translation>공간을 확보한 뒤 다시 시도하세요.</translation>
    </message>
    <message>
        <source>This model needs to run Python code shipped with it, which is off.</source>
        <translation>이 모델은 함께 제공된 Python 코드를 실행해야 하는데, 이 기능이 꺼져 있습니다.</translation>
    </message>
    <message>
        <source>If you trust its source, tick “Run this model&apos;s own code” for it in Open model and open it again.</source>
        <translation>출처를 신뢰한다면 ‘모델 열기’에서 이 모델에 “이 모델 자체 코드 실행”을 켜고 다시 여세요.</translation>
    </message>
    <message>
        <source>There is no model at {0}.</source>
        <translation>{0}에 모델이 없습니다.</translation>
    </message>
    <message>
        <source>Pick another one in Open model.</source>
        <translation>‘모델 열기’에서 다른 모델을 고르세요.</translation>
    </message>
    <message>
        <source>This model folder has no weights files (.safetensors or .bin).</source>
        <translation>이 모델 폴더에는 가중치 파일(.safetensors 또는 .bin)이 없습니다.</translation>
    </message>
    <message>
        <source>The download may be incomplete; download the model again, or pick another folder.</source>
        <translation>내려받기가 끝나지 않았을 수 있습니다. 모델을 다시 내려받거나 다른 폴더를 고르세요.</translation>
    </message>
    <message>
        <source>This model has only pickle weights (.bin / .pt), which can run code when loaded; they are off.</source>
        <translation>이 모델에는 pickle 가중치(.bin / .pt)만 있습니다. pickle은 불러올 때 코드를 실행할 수 있어 꺼져 있습니다.</translation>
    </message>
    <message>
        <source>If you trust its source, tick “Allow pickle weights (.bin / .pt) for this model” in Open model and open it again, or convert it to safetensors.</source>
        <translation>출처를 신뢰한다면 ‘모델 열기’에서 “이 모델에 pickle 가중치(.bin / .pt) 허용”을 켜고 다시 열거나, safetensors로 변환하세요.</translation>
    </message>
    <message>
        <source>There is no config.json next to this file, and it is not a .gguf file.</source>
        <translation>이 파일 옆에 config.json이 없고, .gguf 파일도 아닙니다.</translation>
    </message>
    <message>
        <source>Headroom opens a model folder with a config.json, or a .gguf file: pick the folder, or add its config.json.</source>
        <translation>Headroom은 config.json이 있는 모델 폴더나 .gguf 파일을 엽니다. 폴더를 고르거나 config.json을 넣어 주세요.</translation>
    </message>
    <message>
        <source>This folder has no config.json.</source>
        <translation>이 폴더에는 config.json이 없습니다.</translation>
    </message>
    <message>
        <source>Headroom opens a model folder with a config.json, or a .gguf file.</source>
        <translation>Headroom은 config.json이 있는 모델 폴더나 .gguf 파일을 엽니다.</translation>
    </message>
    <message>
        <source>This file is empty (0 bytes): there is no model in it.</source>
        <translation>이 파일은 비어 있습니다(0바이트). 모델이 들어 있지 않습니다.</translation>
    </message>
    <message>
        <source>The server URL in Settings holds a name or password before “@”.</source>
        <translation>설정의 서버 URL에 “@” 앞의 이름이나 비밀번호가 들어 있습니다.</translation>
    </message>
    <message>
        <source>The server URL in Settings is not an http(s) URL such as http://gpu-box:8000/v1.</source>
        <translation>설정의 서버 URL이 http://gpu-box:8000/v1 같은 http(s) URL이 아닙니다.</translation>
    </message>
    <message>
        <source>No model name is set for the remote server.</source>
        <translation>원격 서버의 모델 이름이 설정되지 않았습니다.</translation>
    </message>
    <message>
        <source>The connection to the server was lost while it answered.</source>
        <translation>서버가 답하는 도중에 연결이 끊어졌습니다.</translation>
    </message>
    <message>
        <source>Remove it from the URL and put the key in the API key field instead.</source>
        <translation>URL에서 지우고, 키는 API 키 칸에 넣으세요.</translation>
    </message>
    <message>
        <source>Fix the server address in Settings.</source>
        <translation>설정에서 서버 주소를 고치세요.</translation>
    </message>
    <message>
        <source>Enter the model name the server serves in Settings.</source>
        <translation>설정에서 서버가 제공하는 모델 이름을 입력하세요.</translation>
    </message>
    <message>
        <source>The server may have stopped or restarted; check it, then try again.</source>
        <translation>서버가 멈췄거나 다시 시작되었을 수 있습니다. 서버를 확인한 뒤 다시 시도하세요.</translation>
    </message>
    <message>
        <source>the file or its folder does not exist</source>
        <translation>파일이나 그 폴더가 없습니다</translation>
    </message>
    <message>
        <source>permission denied</source>
        <translation>권한이 없습니다</translation>
    </message>
    <message>
        <source>the disk is full</source>
        <translation>디스크가 가득 찼습니다</translation>
    </message>
    <message>
        <source>the disk or folder is read-only</source>
        <translation>디스크나 폴더가 읽기 전용입니다</translation>
    </message>
    <message>
        <source>it is a folder, not a file</source>
        <translation>파일이 아니라 폴더입니다</translation>
    </message>
    <message>
        <source>a part of the path is a file, not a folder</source>
        <translation>경로의 일부가 폴더가 아니라 파일입니다</translation>
    </message>
    <message>
        <source>the name is too long</source>
        <translation>이름이 너무 깁니다</translation>
    </message>
    <message>
        <source>a file of that name is in the way</source>
        <translation>같은 이름의 파일이 가로막고 있습니다</translation>
    </message>
    <message>
        <source>it is in use</source>
        <translation>사용 중입니다</translation>
    </message>
    <message>
        <source>the disk could not be read or written</source>
        <translation>디스크를 읽거나 쓸 수 없습니다</translation>
    </message>
    <message>
        <source>the file is too large for this disk</source>
        <translation>이 디스크에 두기에는 파일이 너무 큽니다</translation>
    </message>
    <message>
        <source>too many files are open</source>
        <translation>열려 있는 파일이 너무 많습니다</translation>
    </message>
    <message>
        <source>the path&apos;s links lead in a circle</source>
        <translation>경로의 링크가 순환합니다</translation>
    </message>
    <message>
        <source>the system reported “{0}”</source>
        <translation>시스템이 “{0}” 오류를 보고했습니다</translation>
    </message>
    <message>
        <source>the system reported an error</source>
        <translation>시스템이 오류를 보고했습니다</translation>
    </message>
    <message>
        <source>This model&apos;s architecture ({0}) is not supported by the installed transformers.</source>
        <translation>설치된 transformers가 이 모델의 아키텍처({0})를 지원하지 않습니다.</translation>
    </message>
    <message>
        <source>This is the default model: run `python -m app.install_model`, which installs it again.</source>
        <translation>기본 모델입니다. `python -m app.install_model`을 실행하면 다시 설치됩니다.</translation>
    </message>
    <message>
        <source>The download may not have finished; download it again, or pick another file.</source>
        <translation>다운로드가 끝나지 않았을 수 있습니다. 다시 내려받거나 다른 파일을 고르세요.</translation>
    </message>
    <message>
        <source>This file is not a GGUF file (it does not start with GGUF&apos;s magic bytes).</source>
        <translation>이 파일은 GGUF 파일이 아닙니다(GGUF 매직 바이트로 시작하지 않습니다).</translation>
    </message>
    <message>
        <source>Pick a .gguf model file, or a model folder with a config.json.</source>
        <translation>.gguf 모델 파일이나 config.json이 있는 모델 폴더를 고르세요.</translation>
    </message>
    <message>
        <source>This GGUF file is big-endian (made for IBM mainframes and similar machines); Headroom reads little-endian GGUF files only.</source>
        <translation>이 GGUF 파일은 빅 엔디언 형식입니다(IBM 메인프레임 등 특수한 컴퓨터용). Headroom은 리틀 엔디언 GGUF 파일만 읽습니다.</translation>
    </message>
    <message>
        <source>Pick the ordinary (little-endian) GGUF of this model, as most downloads are.</source>
        <translation>이 모델의 일반(리틀 엔디언) GGUF 파일을 선택하세요. 대부분의 다운로드는 이 형식입니다.</translation>
    </message>
    <message>
        <source>This file is GGUF version {0}; Headroom reads versions 2 and 3.</source>
        <translation>이 파일은 GGUF 버전 {0}입니다. Headroom은 버전 2와 3을 읽습니다.</translation>
    </message>
    <message>
        <source>Pick a GGUF file of version 2 or 3 (what current tools write).</source>
        <translation>버전 2나 3의 GGUF 파일(요즘 도구가 만드는 형식)을 고르세요.</translation>
    </message>
    <message>
        <source>This GGUF file is cut short: it has {0} of the {1} its header lists.</source>
        <translation>이 GGUF 파일은 중간에 잘렸습니다. 헤더에 적힌 {1} 중 {0}만 있습니다.</translation>
    </message>
    <message>
        <source>The download did not finish; download it again.</source>
        <translation>다운로드가 끝나지 않았습니다. 다시 다운로드하세요.</translation>
    </message>
    <message>
        <source>This GGUF file stores weights as {0}, which Headroom cannot convert.</source>
        <translation>이 GGUF 파일은 가중치를 {0} 형식으로 저장해 Headroom이 변환할 수 없습니다.</translation>
    </message>
    <message>
        <source>Pick another quantization of this model (Q4_K_M, Q8_0 or F16, say).</source>
        <translation>이 모델의 다른 양자화 파일(예: Q4_K_M, Q8_0, F16)을 고르세요.</translation>
    </message>
    <message>
        <source>Free some space there, or start Headroom with HEADROOM_CACHE_DIR set to a folder on another disk.</source>
        <translation>그곳의 공간을 확보하거나, HEADROOM_CACHE_DIR을 다른 디스크의 폴더로 지정하고 Headroom을 시작하세요.</translation>
    </message>
    <message>
        <source>There is not enough disk space to convert this GGUF file: it needs {0} in {1}, and {2} is free.</source>
        <translation>이 GGUF 파일을 변환할 디스크 공간이 부족합니다: {1}에 {0}이(가) 필요한데 {2}만 남아 있습니다.</translation>
    </message>
    <message>
        <source>The converted model could not be written to {0}: {1}.</source>
        <translation>변환한 모델을 {0}에 쓸 수 없습니다: {1}.</translation>
    </message>
    <message>
        <source>Check that folder, or start Headroom with HEADROOM_CACHE_DIR set to another folder.</source>
        <translation>그 폴더를 확인하거나, HEADROOM_CACHE_DIR을 다른 폴더로 지정하고 Headroom을 시작하세요.</translation>
    </message>
    <message>
        <source>The model produced invalid numbers (NaN or infinity).</source>
        <translation>모델이 잘못된 수(NaN 또는 무한대)를 만들었습니다.</translation>
    </message>
    <message>
        <source>Its weights may be damaged, or its compute dtype overflows; download the model again, or open another one.</source>
        <translation>가중치가 손상되었거나 계산 dtype에서 오버플로가 났을 수 있습니다. 모델을 다시 내려받거나 다른 모델을 여세요.</translation>
    </message>
    <message>
        <source>The {0} of this model folder could not be read.</source>
        <translation>이 모델 폴더의 {0}을(를) 읽을 수 없습니다.</translation>
    </message>
    <message>
        <source>It may be incomplete or damaged; download the model again, or fix its {0}.</source>
        <translation>파일이 불완전하거나 손상되었을 수 있습니다. 모델을 다시 내려받거나 {0}을(를) 고치세요.</translation>
    </message>
    <message>
        <source>This model&apos;s files do not match: its configuration names {0} layers, its weights hold only {1}.</source>
        <translation>이 모델의 파일이 서로 맞지 않습니다: 설정에는 레이어가 {0}개인데 가중치에는 {1}개뿐입니다.</translation>
    </message>
    <message>
        <source>The files are incomplete or do not belong together; download the model again.</source>
        <translation>파일이 불완전하거나 서로 다른 모델의 것입니다. 모델을 다시 내려받으세요.</translation>
    </message>
    <message>
        <source>This model&apos;s weights do not match its config.json: their tensors have other shapes than it names.</source>
        <translation>이 모델의 가중치가 config.json과 맞지 않습니다: 텐서의 모양이 config.json에 적힌 것과 다릅니다.</translation>
    </message>
    <message>
        <source>The config.json was edited or belongs to another model; download the model again.</source>
        <translation>config.json이 수정되었거나 다른 모델의 것입니다. 모델을 다시 내려받으세요.</translation>
    </message>
    <message>
        <source>This is not a model Headroom can open.</source>
        <translation>Headroom이 열 수 있는 모델이 아닙니다.</translation>
    </message>
    <message>
        <source>Pick a .gguf file or a model folder with a config.json.</source>
        <translation>.gguf 파일이나 config.json이 있는 모델 폴더를 고르세요.</translation>
    </message>
    <message>
        <source>No model is loaded.</source>
        <translation>불러온 모델이 없습니다.</translation>
    </message>
    <message>
        <source>Open a model first (Open model…).</source>
        <translation>먼저 모델을 여세요 (모델 열기…).</translation>
    </message>
    <message>
        <source>Attached files are read by the local model only; this chat&apos;s answers come from a remote server.</source>
        <translation>첨부 파일은 로컬 모델만 읽습니다. 이 채팅의 답변은 원격 서버에서 옵니다.</translation>
    </message>
    <message>
        <source>Send the message without the files, or switch this chat to the local model in Settings.</source>
        <translation>파일 없이 메시지를 보내거나, 설정에서 이 채팅을 로컬 모델로 바꾸세요.</translation>
    </message>
    <message>
        <source>Waiting for another Headroom converting this file</source>
        <translation>다른 Headroom이 이 파일을 변환하는 중이라 기다리는 중</translation>
    </message>
    <message>
        <source>Converted by another Headroom: reused</source>
        <translation>다른 Headroom이 변환한 것을 사용</translation>
    </message>
    <message>
        <source>Converting {1}: {0}</source>
        <translation>변환 중 {1}: {0}</translation>
    </message>
    <message>
        <source>This server cannot continue a stopped answer.</source>
        <translation>이 서버는 중지된 답변을 이어 쓸 수 없습니다.</translation>
    </message>
    <message>
        <source>Use Regenerate for a new answer instead.</source>
        <translation>대신 ‘다시 생성’으로 새 답변을 받으세요.</translation>
    </message>
    <message>
        <source>The model could not be opened.</source>
        <translation>모델을 열지 못했습니다.</translation>
    </message>
    <message>
        <source>The summary of earlier turns could not be written.</source>
        <translation>이전 턴의 요약을 작성하지 못했습니다.</translation>
    </message>
    <message>
        <source>The answer failed.</source>
        <translation>답변에 실패했습니다.</translation>
    </message>
    <message>
        <source>{0} ({1})</source>
        <translation>{0} ({1})</translation>
    </message>
    <message>
        <source>Opening the model file</source>
        <translation>모델 파일을 여는 중</translation>
    </message>
    <message>
        <source>Loading the tokenizer</source>
        <translation>토크나이저를 불러오는 중</translation>
    </message>
    <message>
        <source>Loading weights ({0})</source>
        <translation>가중치를 불러오는 중 ({0})</translation>
    </message>
    <message>
        <source>Ready</source>
        <translation>준비됨</translation>
    </message>
    <message>
        <source>Reading the GGUF tokenizer and chat template</source>
        <translation>GGUF 토크나이저와 채팅 템플릿을 읽는 중</translation>
    </message>
    <message>
        <source>Converted</source>
        <translation>변환 완료</translation>
    </message>
    <message>
        <source>Checking whether {0} was converted before</source>
        <translation>{0}을(를) 전에 변환했는지 확인하는 중</translation>
    </message>
    <message>
        <source>Converted before: reused</source>
        <translation>전에 변환한 것을 다시 사용</translation>
    </message>
    <message>
        <source>Plan: {0}</source>
        <translation>계획: {0}</translation>
    </message>
    <message>
        <source>repeated sentences left out: {0}</source>
        <translation>반복된 문장 {0}개 제외</translation>
    </message>
    <message>
        <source>a loop of {0} characters cut</source>
        <translation>반복 구간 {0}자 잘라냄</translation>
    </message>
    <message>
        <source>the earlier summary was cut to {0} of its {1} sentences to make room</source>
        <translation>자리를 내려고 이전 요약을 {1}문장 중 {0}문장으로 줄였습니다</translation>
    </message>
    <message>
        <source>the turns it folded are no longer in the history</source>
        <translation>요약에 넣으려던 대화는 기록에서 빠졌습니다</translation>
    </message>
    <message>
        <source>the model&apos;s summary was not usable; kept an extract (history {0} → {1} tokens)</source>
        <translation>모델이 쓴 요약을 쓸 수 없어 발췌본을 남겼습니다 (기록 {0} → {1} 토큰)</translation>
    </message>
    <message>
        <source>the model&apos;s summary was not usable; kept what the first and last {0} of {1} messages said (history {2} → {3} tokens)</source>
        <translation>모델이 쓴 요약을 쓸 수 없어 메시지 {1}개 중 처음과 마지막 {0}개의 내용을 남겼습니다 (기록 {2} → {3} 토큰)</translation>
    </message>
    <message>
        <source>the model&apos;s summary was not usable; kept what {0} of {1} messages said, what the user stated before what they asked (history {2} → {3} tokens)</source>
        <translation>모델이 쓴 요약을 쓸 수 없어 메시지 {1}개 중 {0}개의 내용을 남겼습니다. 질문보다 사용자가 밝힌 내용을 먼저 남겼습니다 (기록 {2} → {3} 토큰)</translation>
    </message>
    <message>
        <source>history {0} → {1} tokens</source>
        <translation>기록 {0} → {1} 토큰</translation>
    </message>
    <message>
        <source>cancelled</source>
        <translation>취소됨</translation>
    </message>
    <message>
        <source>the model wrote nothing; kept the previous one</source>
        <translation>모델이 아무것도 쓰지 않아 이전 요약을 유지했습니다</translation>
    </message>
    <message>
        <source>too long ({0} tokens, cap {1}); kept the previous one</source>
        <translation>너무 깁니다 ({0} 토큰, 상한 {1}). 이전 요약을 유지했습니다</translation>
    </message>
    <message>
        <source>the model copied the conversation instead of summarizing it; kept the previous one</source>
        <translation>모델이 요약 대신 대화를 그대로 옮겨 써서 이전 요약을 유지했습니다</translation>
    </message>
    <message>
        <source>the model repeated itself; kept the previous one</source>
        <translation>모델이 같은 말을 반복해서 이전 요약을 유지했습니다</translation>
    </message>
    <message>
        <source>it would not shorten the history ({0} → {1} tokens); kept the previous one</source>
        <translation>기록이 줄어들지 않습니다 ({0} → {1} 토큰). 이전 요약을 유지했습니다</translation>
    </message>
    <message>
        <source>the model did not write it in the conversation&apos;s language; kept the previous one</source>
        <translation>모델이 대화의 언어로 쓰지 않아 이전 요약을 유지했습니다</translation>
    </message>
    <message>
        <source>the model left out most facts of the earlier summary (kept {0} of {1}; lost: {2}); kept the previous one</source>
        <translation>모델이 이전 요약의 사실 대부분을 빠뜨렸습니다 ({1}개 중 {0}개 유지, 빠진 것: {2}). 이전 요약을 유지했습니다</translation>
    </message>
    <message>
        <source>the model copied an answer instead of summarizing; kept the previous one</source>
        <translation>모델이 요약 대신 답변을 그대로 옮겨 써서 이전 요약을 유지했습니다</translation>
    </message>
    <message>
        <source>the model wrote back only part of the earlier summary; kept the previous one</source>
        <translation>모델이 이전 요약의 일부만 다시 써서 이전 요약을 유지했습니다</translation>
    </message>
    <message>
        <source>the model left out what the user said (lost: {0}); kept the previous one</source>
        <translation>모델이 사용자가 한 말을 빠뜨렸습니다 (빠진 것: {0}). 이전 요약을 유지했습니다</translation>
    </message>
    <message>
        <source>the model left out what the user said in the turns it folded (lost: {0}); kept the previous one</source>
        <translation>모델이 요약에 넣을 대화에서 사용자가 한 말을 빠뜨렸습니다 (빠진 것: {0}). 이전 요약을 유지했습니다</translation>
    </message>
    <message>
        <source>nothing to fold: the newest turn alone does not fit the context ({0} tokens over)</source>
        <translation>접을 내용이 없습니다: 가장 최근 턴 하나만으로도 컨텍스트에 들어가지 않습니다({0}토큰 초과)</translation>
    </message>
</context>
<context>
    <name>Presets</name>
    <message>
        <source>Balanced</source>
        <translation>균형</translation>
    </message>
    <message>
        <source>Today&apos;s defaults: varied but on topic.</source>
        <translation>기본 설정: 다양하지만 주제를 벗어나지 않습니다.</translation>
    </message>
    <message>
        <source>Precise</source>
        <translation>정확</translation>
    </message>
    <message>
        <source>Nearly greedy: facts, extraction, short exact answers.</source>
        <translation>거의 탐욕적 디코딩: 사실 확인, 정보 추출, 짧고 정확한 답.</translation>
    </message>
    <message>
        <source>Creative</source>
        <translation>창의</translation>
    </message>
    <message>
        <source>Stories and brainstorming: more varied words, fewer repeats.</source>
        <translation>이야기와 브레인스토밍: 더 다양한 단어, 반복은 적게.</translation>
    </message>
    <message>
        <source>Code</source>
        <translation>코드</translation>
    </message>
    <message>
        <source>Programming: low temperature, long replies, no penalty on repeated tokens.</source>
        <translation>프로그래밍: 낮은 온도, 긴 답변, 반복 토큰에 벌점 없음.</translation>
    </message>
    <message>
        <source>한국어 도우미</source>
        <translation>한국어 도우미</translation>
    </message>
    <message>
        <source>Answers in natural Korean whatever the question&apos;s language.</source>
        <translation>질문이 어떤 언어이든 자연스러운 한국어로 답합니다.</translation>
    </message>
    <message>
        <source>Your presets could not be read: {0}</source>
        <translation>프리셋을 읽지 못했습니다: {0}</translation>
    </message>
    <message>
        <source>Your presets could not be read: {0}. The file was kept as {1}, and the built-in presets are used.</source>
        <translation>프리셋을 읽지 못했습니다: {0}. 파일은 {1}(으)로 보관했고 기본 프리셋을 사용합니다.</translation>
    </message>
    <message>
        <source>There is no preset named {0}.</source>
        <translation>{0}(이)라는 프리셋이 없습니다.</translation>
    </message>
    <message>
        <source>Preset: {0}</source>
        <translation>프리셋: {0}</translation>
    </message>
    <message>
        <source>The preset was not saved: {0}</source>
        <translation>프리셋을 저장하지 못했습니다: {0}</translation>
    </message>
    <message>
        <source>The preset was not removed: {0}</source>
        <translation>프리셋을 제거하지 못했습니다: {0}</translation>
    </message>
    <message>
        <source>Nothing was imported: {0}</source>
        <translation>아무것도 가져오지 못했습니다: {0}</translation>
    </message>
    <message numerus="yes">
        <source>Imported {0} presets</source>
        <translation>
            <numerusform>프리셋 {0}개를 가져왔습니다</numerusform>
        </translation>
    </message>
    <message>
        <source>values outside their range were changed: {0}</source>
        <translation>범위를 벗어난 값을 바꿨습니다: {0}</translation>
    </message>
    <message>
        <source>Nothing to export: you have no presets of your own yet. Select a preset to export it, or save these settings as one first.</source>
        <translation>내보낼 것이 없습니다: 아직 직접 만든 프리셋이 없습니다. 내보낼 프리셋을 고르거나, 먼저 지금 설정을 프리셋으로 저장하세요.</translation>
    </message>
    <message>
        <source>Could not export to {0}: {1}</source>
        <translation>{0}(으)로 내보내지 못했습니다: {1}</translation>
    </message>
    <message numerus="yes">
        <source>Exported {0} presets to {1}</source>
        <translation>
            <numerusform>프리셋 {0}개를 {1}(으)로 내보냈습니다</numerusform>
        </translation>
    </message>
    <message>
        <source>{0} could not be read when Headroom started and is left as it is; move it away, or fix it and restart Headroom, to save presets</source>
        <translation>{0} 파일을 Headroom 시작 시 읽을 수 없어 그대로 두었습니다. 프리셋을 저장하려면 이 파일을 다른 곳으로 옮기거나, 고친 뒤 Headroom을 다시 시작하세요</translation>
    </message>
    <message>
        <source>preset “{0}”: unknown field “{1}” ignored</source>
        <translation>프리셋 “{0}”: 알 수 없는 필드 “{1}”은(는) 무시했습니다</translation>
    </message>
    <message>
        <source>preset “{0}”: unknown setting “{1}” ignored</source>
        <translation>프리셋 “{0}”: 알 수 없는 설정 “{1}”은(는) 무시했습니다</translation>
    </message>
    <message>
        <source>a preset needs a name</source>
        <translation>프리셋에는 이름이 필요합니다</translation>
    </message>
    <message>
        <source>the preset name “{preset}…” is longer than {value} characters</source>
        <translation>프리셋 이름 “{preset}…”이(가) {value}자보다 깁니다</translation>
    </message>
    <message>
        <source>preset {value} is not a preset (an object with a name and values)</source>
        <translation>{value}번째 프리셋은 프리셋(이름과 values가 있는 객체)이 아닙니다</translation>
    </message>
    <message>
        <source>preset “{preset}”: its “values” must be an object of settings</source>
        <translation>프리셋 “{preset}”: “values”는 설정을 담은 객체여야 합니다</translation>
    </message>
    <message>
        <source>preset “{preset}”: {setting} is not a text ({value})</source>
        <translation>프리셋 “{preset}”: {setting} 값이 텍스트가 아닙니다({value})</translation>
    </message>
    <message>
        <source>preset “{preset}”: {setting} is not a number ({value})</source>
        <translation>프리셋 “{preset}”: {setting} 값이 숫자가 아닙니다({value})</translation>
    </message>
    <message>
        <source>preset “{preset}”: {setting} is not a usable number ({value})</source>
        <translation>프리셋 “{preset}”: {setting} 값이 쓸 수 있는 숫자가 아닙니다({value})</translation>
    </message>
    <message>
        <source>preset “{preset}”: its settings ({value}) belong under “values”, as Headroom exports them</source>
        <translation>프리셋 “{preset}”: 설정({value})은 Headroom이 내보내는 형식처럼 “values” 아래에 있어야 합니다</translation>
    </message>
    <message>
        <source>preset “{preset}” has no setting Headroom knows under “values”</source>
        <translation>프리셋 “{preset}”: “values” 아래에 Headroom이 아는 설정이 없습니다</translation>
    </message>
    <message>
        <source>this is not a Headroom presets file (format {value})</source>
        <translation>Headroom 프리셋 파일이 아닙니다(형식 {value})</translation>
    </message>
    <message>
        <source>a preset named “{preset}” already exists</source>
        <translation>“{preset}” 프리셋이 이미 있습니다</translation>
    </message>
    <message>
        <source>“{preset}” is a built-in preset; choose another name</source>
        <translation>“{preset}”은(는) 기본 제공 프리셋입니다. 다른 이름을 고르세요</translation>
    </message>
    <message>
        <source>there is no preset named “{preset}”</source>
        <translation>“{preset}” 프리셋이 없습니다</translation>
    </message>
    <message>
        <source>“{preset}” is a built-in preset and cannot be removed</source>
        <translation>“{preset}”은(는) 기본 제공 프리셋이라 지울 수 없습니다</translation>
    </message>
    <message>
        <source>{file} is not a text file</source>
        <translation>{file}은(는) 텍스트 파일이 아닙니다</translation>
    </message>
    <message>
        <source>{file} is not valid JSON (line {line}, column {column})</source>
        <translation>{file}은(는) 올바른 JSON이 아닙니다({line}행 {column}열)</translation>
    </message>
    <message>
        <source>{file} is not valid JSON (nested too deeply)</source>
        <translation>{file}은(는) 올바른 JSON이 아닙니다(너무 깊게 중첩됨)</translation>
    </message>
    <message>
        <source>the presets file {file} cannot be read or moved aside</source>
        <translation>프리셋 파일 {file}을(를) 읽을 수도 옮겨 둘 수도 없습니다</translation>
    </message>
    <message>
        <source>{file} holds no presets</source>
        <translation>{file}에 프리셋이 없습니다</translation>
    </message>
</context>
<context>
    <name>PresetsDialog</name>
    <message>
        <source>Presets</source>
        <translation>프리셋</translation>
    </message>
    <message>
        <source>Use in this chat</source>
        <translation>이 채팅에 사용</translation>
    </message>
    <message>
        <source>Save current settings…</source>
        <translation>현재 설정 저장…</translation>
    </message>
    <message>
        <source>Remove</source>
        <translation>제거</translation>
    </message>
    <message>
        <source>Import…</source>
        <translation>가져오기…</translation>
    </message>
    <message>
        <source>Export…</source>
        <translation>내보내기…</translation>
    </message>
    <message>
        <source>(built-in)</source>
        <translation>(기본 제공)</translation>
    </message>
    <message>
        <source>Save as preset</source>
        <translation>프리셋으로 저장</translation>
    </message>
    <message>
        <source>Name of the new preset:</source>
        <translation>새 프리셋 이름:</translation>
    </message>
    <message>
        <source>Import presets</source>
        <translation>프리셋 가져오기</translation>
    </message>
    <message>
        <source>Presets (*.json)</source>
        <translation>프리셋 (*.json)</translation>
    </message>
    <message>
        <source>Export presets</source>
        <translation>프리셋 내보내기</translation>
    </message>
</context>
<context>
    <name>QAbstractFileIconProvider</name>
    <message>
        <source>Folder</source>
        <comment>All other platforms</comment>
        <translation>폴더</translation>
    </message>
    <message>
        <source>Drive</source>
        <translation>드라이브</translation>
    </message>
    <message>
        <source>Shortcut</source>
        <comment>All other platforms</comment>
        <translation>바로 가기</translation>
    </message>
    <message>
        <source>Unknown</source>
        <translation>알 수 없음</translation>
    </message>
</context>
<context>
    <name>QFileDialog</name>
    <message>
        <source>&amp;Look in:</source>
        <translation>다음에서 찾기(&amp;L):</translation>
    </message>
    <message>
        <source>Files of &amp;type:</source>
        <translation>파일 형식(&amp;T):</translation>
    </message>
</context>
<context>
    <name>QuitQuestion</name>
    <message>
        <source>Quit Headroom</source>
        <translation>Headroom 끝내기</translation>
    </message>
    <message>
        <source>An answer is still being written. Quit anyway?</source>
        <translation>아직 답변을 작성하는 중입니다. 그래도 끝낼까요?</translation>
    </message>
    <message>
        <source>The answer so far is kept, marked as stopped.</source>
        <translation>지금까지 쓴 답변은 ‘중지됨’으로 표시되어 남습니다.</translation>
    </message>
    <message>
        <source>Quit</source>
        <translation>끝내기</translation>
    </message>
    <message>
        <source>The answer is finished. Quit now?</source>
        <translation>답변이 끝났습니다. 지금 끝낼까요?</translation>
    </message>
    <message>
        <source>Nothing is lost: the conversation is saved.</source>
        <translation>잃는 것은 없습니다. 대화는 저장되어 있습니다.</translation>
    </message>
</context>
<context>
    <name>ReasoningSection</name>
    <message>
        <source>Reasoning</source>
        <translation>추론 과정</translation>
    </message>
    <message>
        <source>Thinking…</source>
        <translation>생각하는 중…</translation>
    </message>
    <message>
        <source>Reasoning (unfinished)</source>
        <translation>추론 과정 (끝나지 않음)</translation>
    </message>
    <message>
        <source>Hide the model&apos;s reasoning</source>
        <translation>모델의 추론 과정 숨기기</translation>
    </message>
    <message>
        <source>Show how the model reasoned before it answered</source>
        <translation>모델이 답하기 전에 추론한 과정 보기</translation>
    </message>
</context>
<context>
    <name>Refusal</name>
    <message>
        <source>This turn needs {0} of memory but {1} is free: short by {2}.</source>
        <translation>이번 턴에는 메모리 {0}이(가) 필요하지만 여유는 {1}뿐이라 {2}이(가) 부족합니다.</translation>
    </message>
    <message numerus="yes">
        <source>The prompt ({0} tokens) plus max new tokens ({1}) is {2} tokens, more than the context limit of {3} tokens; the prompt may use at most {4}.</source>
        <translation>
            <numerusform>프롬프트({0} 토큰)와 최대 새 토큰 수({1})를 더하면 {2} 토큰으로, 컨텍스트 한도 {3} 토큰을 넘습니다. 프롬프트는 최대 {4} 토큰까지 쓸 수 있습니다.</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>The new message needs {0} tokens with the system prompt, but the context of {1} tokens minus max new tokens ({2}) and the summary reserve ({3}) leaves {4}.</source>
        <translation>
            <numerusform>새 메시지에는 시스템 프롬프트를 포함해 {0} 토큰이 필요하지만, {1} 토큰 컨텍스트에서 최대 새 토큰 수({2})와 요약 예약분({3})을 빼면 {4} 토큰만 남습니다.</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>The system prompt takes {0} tokens, but the context of {1} tokens minus max new tokens ({2}) and the summary reserve ({3}) leaves {4} for it and the new message.</source>
        <translation>
            <numerusform>시스템 프롬프트가 {0} 토큰을 차지하지만, {1} 토큰 컨텍스트에서 최대 새 토큰 수({2})와 요약 예약분({3})을 빼면 시스템 프롬프트와 새 메시지에 {4} 토큰만 남습니다.</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>This chat&apos;s pinned notes take {0} tokens, but the context of {1} tokens minus max new tokens ({2}) and the summary reserve ({3}) leaves {4} for them, the system prompt and the new message.</source>
        <translation>
            <numerusform>이 채팅의 고정 메모가 {0} 토큰을 차지하지만, {1} 토큰 컨텍스트에서 최대 새 토큰 수({2})와 요약 예약분({3})을 빼면 고정 메모와 시스템 프롬프트, 새 메시지에 {4} 토큰만 남습니다.</numerusform>
        </translation>
    </message>
    <message>
        <source>Trim older turns or lower max new tokens; or close other programs, or open a smaller model.</source>
        <translation>이전 턴을 줄이거나 최대 새 토큰 수를 낮추세요. 또는 다른 프로그램을 닫거나 더 작은 모델을 여세요.</translation>
    </message>
    <message>
        <source>Trim older turns or lower max new tokens.</source>
        <translation>이전 턴을 줄이거나 최대 새 토큰 수를 낮추세요.</translation>
    </message>
    <message numerus="yes">
        <source>Shorten it by {0} tokens.</source>
        <translation>
            <numerusform>메시지를 {0} 토큰 줄이세요.</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>Shorten it by {0} tokens or lower max new tokens.</source>
        <translation>
            <numerusform>메시지를 {0} 토큰 줄이거나 최대 새 토큰 수를 낮추세요.</numerusform>
        </translation>
    </message>
    <message>
        <source>Use a larger context or lower max new tokens.</source>
        <translation>더 큰 컨텍스트를 쓰거나 최대 새 토큰 수를 낮추세요.</translation>
    </message>
    <message>
        <source>Even an empty message needs {0} tokens with the system prompt, so shortening the message cannot make it fit: shorten the system prompt (Edit → Settings → System prompt) as well, lower max new tokens or use a larger context.</source>
        <translation>빈 메시지도 시스템 프롬프트를 포함해 {0} 토큰이 필요하므로 메시지를 줄여서는 들어가지 않습니다. 시스템 프롬프트(편집 → 설정 → 시스템 프롬프트)도 함께 줄이거나, 최대 새 토큰 수를 낮추거나, 더 큰 컨텍스트를 쓰세요.</translation>
    </message>
    <message>
        <source>Even an empty message needs {0} tokens with the system prompt, so shortening the message cannot make it fit: shorten the system prompt (Edit → Settings → System prompt) as well or use a larger context.</source>
        <translation>빈 메시지도 시스템 프롬프트를 포함해 {0} 토큰이 필요하므로 메시지를 줄여서는 들어가지 않습니다. 시스템 프롬프트(편집 → 설정 → 시스템 프롬프트)도 함께 줄이거나 더 큰 컨텍스트를 쓰세요.</translation>
    </message>
    <message>
        <source>Even an empty message needs {0} tokens with the system prompt, so shortening the message cannot make it fit: lower max new tokens or use a larger context.</source>
        <translation>빈 메시지도 시스템 프롬프트를 포함해 {0} 토큰이 필요하므로 메시지를 줄여서는 들어가지 않습니다. 최대 새 토큰 수를 낮추거나 더 큰 컨텍스트를 쓰세요.</translation>
    </message>
    <message>
        <source>Even an empty message needs {0} tokens with the system prompt, so shortening the message cannot make it fit: use a larger context.</source>
        <translation>빈 메시지도 시스템 프롬프트를 포함해 {0} 토큰이 필요하므로 메시지를 줄여서는 들어가지 않습니다. 더 큰 컨텍스트를 쓰세요.</translation>
    </message>
    <message numerus="yes">
        <source>Shorten this chat&apos;s pinned notes (Notes, in the chat bar) by {0} tokens.</source>
        <translation>
            <numerusform>이 채팅의 고정 메모(채팅 막대의 메모)를 {0} 토큰 줄이세요.</numerusform>
        </translation>
    </message>
    <message>
        <source>Removing the pinned notes cannot make it fit: lower max new tokens or use a larger context.</source>
        <translation>고정 메모를 지워도 들어가지 않습니다. 최대 새 토큰 수를 낮추거나 더 큰 컨텍스트를 쓰세요.</translation>
    </message>
    <message>
        <source>Removing the pinned notes cannot make it fit: use a larger context.</source>
        <translation>고정 메모를 지워도 들어가지 않습니다. 더 큰 컨텍스트를 쓰세요.</translation>
    </message>
    <message numerus="yes">
        <source>Shorten the system prompt (Edit → Settings → System prompt) by {0} tokens.</source>
        <translation>
            <numerusform>시스템 프롬프트(편집 → 설정 → 시스템 프롬프트)를 {0} 토큰 줄이세요.</numerusform>
        </translation>
    </message>
    <message>
        <source>Shortening the system prompt cannot make it fit: lower max new tokens or use a larger context.</source>
        <translation>시스템 프롬프트를 줄여서는 들어가지 않습니다. 최대 새 토큰 수를 낮추거나 더 큰 컨텍스트를 쓰세요.</translation>
    </message>
    <message>
        <source>Shortening the system prompt cannot make it fit: use a larger context.</source>
        <translation>시스템 프롬프트를 줄여서는 들어가지 않습니다. 더 큰 컨텍스트를 쓰세요.</translation>
    </message>
    <message>
        <source>This turn was not started: {0}</source>
        <translation>이번 턴을 시작하지 않았습니다: {0}</translation>
    </message>
    <message>
        <source>This turn was not started. {0} {1}</source>
        <translation>이번 턴을 시작하지 않았습니다. {0} {1}</translation>
    </message>
    <message>
        <source>needs {0}</source>
        <translation>필요 {0}</translation>
    </message>
    <message numerus="yes">
        <source>Trim older turns (drop at least {0} tokens)</source>
        <translation>
            <numerusform>이전 턴 줄이기 (최소 {0} 토큰 제거)</numerusform>
        </translation>
    </message>
    <message>
        <source>Lower max new tokens to {0}, leaving room for the chat</source>
        <translation>최대 새 토큰 수를 {0}(으)로 낮추고 대화할 자리 남기기</translation>
    </message>
    <message>
        <source>Lower max new tokens to {0}</source>
        <translation>최대 새 토큰 수를 {0}(으)로 낮추기</translation>
    </message>
    <message>
        <source>Switch this chat to 8-bit KV cache — needs {0}</source>
        <translation>이 대화를 8비트 KV 캐시로 전환 — 필요 {0}</translation>
    </message>
    <message>
        <source>Prefill in {0}-token chunks</source>
        <translation>{0} 토큰 단위로 나눠 프리필</translation>
    </message>
    <message>
        <source>Close other programs using this device, or load a smaller model.</source>
        <translation>이 장치를 쓰는 다른 프로그램을 닫거나 더 작은 모델을 불러오세요.</translation>
    </message>
</context>
<context>
    <name>ReplyStats</name>
    <message>
        <source>no tokens</source>
        <translation>토큰 없음</translation>
    </message>
    <message>
        <source>{0} tok/s</source>
        <translation>초당 {0} 토큰</translation>
    </message>
    <message>
        <source>TTFT {0}</source>
        <translation>TTFT {0}</translation>
    </message>
    <message>
        <source>Time to first token: {0}</source>
        <translation>첫 토큰까지 시간: {0}</translation>
    </message>
    <message>
        <source>Decode: {0} tokens/s</source>
        <translation>디코드: 초당 {0} 토큰</translation>
    </message>
    <message>
        <source>Decode: one token, no speed to measure</source>
        <translation>디코드: 토큰 하나뿐이라 측정할 속도가 없습니다</translation>
    </message>
    <message>
        <source>Last part:</source>
        <translation>마지막 부분:</translation>
    </message>
    <message>
        <source>KV cache precision: {0}</source>
        <translation>KV 캐시 정밀도: {0}</translation>
    </message>
    <message>
        <source>Answered by: {0}</source>
        <translation>답변한 모델: {0}</translation>
    </message>
</context>
<context>
    <name>ReplyStatsText</name>
    <message numerus="yes">
        <source>{0} tokens</source>
        <translation>
            <numerusform>{0} 토큰</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>last part: {0} tokens, {1}</source>
        <translation>
            <numerusform>마지막 부분: {0} 토큰, {1}</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>Prompt: {0} tokens ({1} prefilled, {2} reused from the KV cache)</source>
        <translation>
            <numerusform>프롬프트: {0} 토큰 (프리필 {1}, KV 캐시에서 재사용 {2})</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>Answer: {0} new tokens</source>
        <translation>
            <numerusform>답변: 새 토큰 {0}개</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>Answer: {0} new tokens, {1} of them in the last part (Continue)</source>
        <translation>
            <numerusform>답변: 새 토큰 {0}개, 그중 {1}개는 마지막 부분(이어 쓰기)</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>RetryNotice</name>
    <message>
        <source>Retry</source>
        <translation>다시 시도</translation>
    </message>
    <message>
        <source>Ask the same question again</source>
        <translation>같은 질문을 다시 보냅니다</translation>
    </message>
</context>
<context>
    <name>Saving</name>
    <message>
        <source>Your conversations cannot be saved to {0}: chats and changes in this session are kept only until Headroom closes.</source>
        <translation>대화를 {0}에 저장할 수 없습니다: 이번 세션의 대화와 변경 사항은 Headroom을 닫을 때까지만 유지됩니다.</translation>
    </message>
    <message>
        <source>Saving works again.</source>
        <translation>다시 저장됩니다.</translation>
    </message>
    <message>
        <source>another program is using the database</source>
        <translation>다른 프로그램이 데이터베이스를 사용 중입니다</translation>
    </message>
    <message>
        <source>the database file is read-only</source>
        <translation>데이터베이스 파일이 읽기 전용입니다</translation>
    </message>
    <message>
        <source>the database file could not be opened</source>
        <translation>데이터베이스 파일을 열 수 없습니다</translation>
    </message>
    <message>
        <source>Could not save: the disk is full ({0}). Free some space; {1}</source>
        <translation>저장하지 못했습니다: 디스크가 가득 찼습니다({0}). 공간을 확보하세요. {1}</translation>
    </message>
    <message>
        <source>Could not save: {0} ({1}); {2}</source>
        <translation>저장하지 못했습니다: {0} ({1}). {2}</translation>
    </message>
    <message>
        <source>Conversations are not being saved: the disk is full ({0}). Free some space.</source>
        <translation>대화가 저장되지 않고 있습니다: 디스크가 가득 찼습니다({0}). 공간을 확보하세요.</translation>
    </message>
    <message>
        <source>Conversations are not being saved: {0} ({1}).</source>
        <translation>대화가 저장되지 않고 있습니다: {0} ({1}).</translation>
    </message>
    <message>
        <source>The conversation database is damaged. It was kept as {0}, and a new one was started with the conversations that could still be read: {1} of {2}.</source>
        <translation>대화 데이터베이스가 손상되었습니다. 기존 파일은 {0}(으)로 보관하고, 대화 {2}개 중 아직 읽을 수 있는 {1}개를 옮겨 새 데이터베이스를 시작했습니다.</translation>
    </message>
    <message>
        <source>The conversation database could not be read: it is damaged or is not a database. It was kept as {0} and a new one was started.</source>
        <translation>대화 데이터베이스를 읽을 수 없습니다: 손상되었거나 데이터베이스 파일이 아닙니다. 기존 파일은 {0}(으)로 보관하고 새 데이터베이스를 시작했습니다.</translation>
    </message>
    <message>
        <source>Your conversations cannot be saved now: the disk is full ({0}). Free some space: saving resumes by itself, and until then a message you send goes back to the message box.</source>
        <translation>지금은 대화를 저장할 수 없습니다: 디스크가 가득 찼습니다({0}). 공간을 확보하세요. 저장은 저절로 다시 시작되며, 그때까지 보내는 메시지는 입력란으로 돌아갑니다.</translation>
    </message>
    <message>
        <source>Your conversations cannot be read or saved now: the disk is full ({0}). Free some space: saving resumes by itself and they show again, and until then a message you send goes back to the message box.</source>
        <translation>지금은 대화를 읽거나 저장할 수 없습니다: 디스크가 가득 찼습니다({0}). 공간을 확보하세요. 저장이 저절로 다시 시작되고 대화도 다시 표시되며, 그때까지 보내는 메시지는 입력란으로 돌아갑니다.</translation>
    </message>
    <message>
        <source>Your conversations were saved by a newer version of Headroom (database v{0}; this version reads up to v{1}).</source>
        <translation>대화가 더 새로운 버전의 Headroom으로 저장되었습니다 (데이터베이스 v{0}, 이 버전은 v{1}까지 읽을 수 있습니다).</translation>
    </message>
    <message>
        <source>They are shown, but new chats, messages and changes in this session are kept only until Headroom closes. Update Headroom to continue them.</source>
        <translation>기존 대화는 표시되지만, 이번 세션의 새 대화와 메시지, 변경 사항은 Headroom을 닫을 때까지만 유지됩니다. 이어서 쓰려면 Headroom을 업데이트하세요.</translation>
    </message>
    <message>
        <source>This version cannot read them; the file was left untouched and chats in this session are not saved. Update Headroom to see them.</source>
        <translation>이 버전에서는 대화를 읽을 수 없습니다. 파일은 그대로 두었으며 이번 세션의 대화는 저장되지 않습니다. 대화를 보려면 Headroom을 업데이트하세요.</translation>
    </message>
    <message>
        <source>Your conversations cannot be saved ({0}: {1}).</source>
        <translation>대화를 저장할 수 없습니다 ({0}: {1}).</translation>
    </message>
    <message>
        <source>They are shown, but new chats, messages and changes in this session are kept only until Headroom closes. Make the file writable, or close what holds it, and restart Headroom.</source>
        <translation>기존 대화는 표시되지만, 이번 세션의 새 대화와 메시지, 변경 사항은 Headroom을 닫을 때까지만 유지됩니다. 파일을 쓸 수 있게 하거나 파일을 사용 중인 프로그램을 닫은 뒤 Headroom을 다시 시작하세요.</translation>
    </message>
    <message>
        <source>Chats in this session are kept only until Headroom closes.</source>
        <translation>이번 세션의 대화는 Headroom을 닫을 때까지만 유지됩니다.</translation>
    </message>
    <message>
        <source>your message was not sent and is back in the message box.</source>
        <translation>메시지는 보내지지 않았고 입력란으로 돌아갔습니다.</translation>
    </message>
    <message>
        <source>nothing was changed.</source>
        <translation>아무것도 바뀌지 않았습니다.</translation>
    </message>
    <message>
        <source>the change applies now but is not kept.</source>
        <translation>변경 사항은 지금 적용되지만 유지되지 않습니다.</translation>
    </message>
    <message>
        <source>the summary is used now but is not kept.</source>
        <translation>요약은 지금 사용되지만 유지되지 않습니다.</translation>
    </message>
    <message>
        <source>the answer stays shown and is saved with your next message, or when you open another chat or quit, once there is room.</source>
        <translation>답변은 화면에 그대로 남으며, 공간이 생기면 다음 메시지를 보낼 때나 다른 대화를 열거나 종료할 때 저장됩니다.</translation>
    </message>
    <message>
        <source>the answer was not saved.</source>
        <translation>답변이 저장되지 않았습니다.</translation>
    </message>
    <message>
        <source>the answer written in “{0}” was not saved.</source>
        <translation>“{0}”에서 작성된 답변이 저장되지 않았습니다.</translation>
    </message>
</context>
<context>
    <name>SavingBadge</name>
    <message>
        <source>Not saving</source>
        <translation>저장 안 됨</translation>
    </message>
    <message>
        <source>Conversations are not being saved</source>
        <translation>대화가 저장되지 않고 있습니다</translation>
    </message>
</context>
<context>
    <name>ServerMetricsView</name>
    <message>
        <source>Waiting for the server&apos;s first reading…</source>
        <translation>서버의 첫 측정값을 기다리는 중…</translation>
    </message>
    <message>
        <source>The model runs on the server; the memory figures below are this computer&apos;s.</source>
        <translation>모델은 서버에서 실행됩니다. 아래 메모리 수치는 이 컴퓨터의 것입니다.</translation>
    </message>
    <message>
        <source>KV cache {0} in use ({1})</source>
        <translation>KV 캐시 {0} 사용 중 ({1})</translation>
    </message>
    <message>
        <source>KV cache usage not reported</source>
        <translation>KV 캐시 사용량이 보고되지 않음</translation>
    </message>
    <message>
        <source>{0} running</source>
        <translation>{0}개 실행 중</translation>
    </message>
    <message>
        <source>{0} waiting</source>
        <translation>{0}개 대기 중</translation>
    </message>
    <message>
        <source>The server reports no memory figures (it has no /metrics endpoint).</source>
        <translation>서버가 메모리 수치를 알려 주지 않습니다 (/metrics 엔드포인트가 없음).</translation>
    </message>
    <message>
        <source>The server&apos;s /metrics has no KV-cache or queue figures (not a vLLM server?).</source>
        <translation>서버의 /metrics에 KV 캐시나 대기열 수치가 없습니다 (vLLM 서버가 아닌가요?).</translation>
    </message>
    <message>
        <source>No reading: {0}</source>
        <translation>읽지 못함: {0}</translation>
    </message>
    <message>
        <source>Remote server</source>
        <translation>원격 서버</translation>
    </message>
</context>
<context>
    <name>SettingsDialog</name>
    <message>
        <source>Settings</source>
        <translation>설정</translation>
    </message>
    <message numerus="yes">
        <source> tokens</source>
        <translation>
            <numerusform> 토큰</numerusform>
        </translation>
    </message>
    <message>
        <source>0 = greedy decoding (deterministic)</source>
        <translation>0 = 탐욕적 디코딩 (결정적)</translation>
    </message>
    <message>
        <source>Nucleus sampling: keep the smallest set of tokens with this total probability</source>
        <translation>뉴클리어스 샘플링: 누적 확률이 이 값에 이르는 가장 작은 토큰 집합만 남깁니다</translation>
    </message>
    <message>
        <source>auto (the largest that fits)</source>
        <translation>자동 (들어가는 가장 큰 크기)</translation>
    </message>
    <message>
        <source>Cap the context window below the model&apos;s own: older turns beyond it are folded into a summary. Smaller = less KV cache memory. Auto: the largest context whose KV cache fits this machine beside the model.</source>
        <translation>컨텍스트 창을 모델 자체 한도보다 작게 제한합니다. 이를 넘는 이전 턴은 요약으로 접힙니다. 작을수록 KV 캐시 메모리가 적게 듭니다. 자동: 모델과 함께 이 컴퓨터에 KV 캐시가 들어가는 가장 큰 컨텍스트.</translation>
    </message>
    <message>
        <source>The open model uses its own context: {0} tokens (Open model). This setting applies to models without their own.</source>
        <translation>열린 모델은 자체 컨텍스트 {0} 토큰을 씁니다(모델 열기에서 설정). 이 설정은 자체 컨텍스트가 없는 모델에 적용됩니다.</translation>
    </message>
    <message>
        <source>System prompt</source>
        <translation>시스템 프롬프트</translation>
    </message>
    <message>
        <source>Max new tokens</source>
        <translation>최대 새 토큰 수</translation>
    </message>
    <message>
        <source>Temperature</source>
        <translation>온도</translation>
    </message>
    <message>
        <source>Top-p</source>
        <translation>Top-p</translation>
    </message>
    <message>
        <source>Top-k</source>
        <translation>Top-k</translation>
    </message>
    <message>
        <source>Min-p</source>
        <translation>Min-p</translation>
    </message>
    <message>
        <source>Repetition penalty</source>
        <translation>반복 페널티</translation>
    </message>
    <message>
        <source>Seed</source>
        <translation>시드</translation>
    </message>
    <message>
        <source>Context window</source>
        <translation>컨텍스트 창</translation>
    </message>
    <message>
        <source>CPU threads</source>
        <translation>CPU 스레드</translation>
    </message>
    <message>
        <source>Recent chats&apos; KV caches</source>
        <translation>최근 채팅의 KV 캐시</translation>
    </message>
    <message>
        <source>Summarize from</source>
        <translation>요약 시작 지점</translation>
    </message>
    <message>
        <source>Keep verbatim</source>
        <translation>원문 유지</translation>
    </message>
    <message>
        <source>Language</source>
        <translation>언어</translation>
    </message>
    <message>
        <source>Appearance</source>
        <translation>화면 모드</translation>
    </message>
    <message>
        <source>Backend (this conversation)</source>
        <translation>백엔드 (이 대화)</translation>
    </message>
    <message>
        <source>off</source>
        <translation>끔</translation>
    </message>
    <message>
        <source>Keep only the k likeliest tokens (transformers&apos; TopKLogitsWarper)</source>
        <translation>가장 가능성 높은 토큰 k개만 남깁니다 (transformers의 TopKLogitsWarper)</translation>
    </message>
    <message>
        <source>Drop tokens below this fraction of the top token&apos;s probability (MinPLogitsWarper)</source>
        <translation>최상위 토큰 확률의 이 비율보다 낮은 토큰을 버립니다 (MinPLogitsWarper)</translation>
    </message>
    <message>
        <source>&gt; 1 discourages repeating tokens already in the prompt or reply; 1 = off</source>
        <translation>1보다 크면 프롬프트나 답변에 이미 나온 토큰의 반복을 억제합니다. 1 = 끔</translation>
    </message>
    <message>
        <source>random</source>
        <translation>무작위</translation>
    </message>
    <message>
        <source>A fixed seed makes sampled answers repeat exactly</source>
        <translation>시드를 고정하면 샘플링한 답변이 똑같이 반복됩니다</translation>
    </message>
    <message>
        <source>automatic</source>
        <translation>자동</translation>
    </message>
    <message>
        <source>Threads for a model on the CPU, at most this computer&apos;s {0} logical cores; automatic uses the cores other programs leave idle, so one busy core does not stall every token</source>
        <translation>CPU에서 모델을 돌릴 스레드 수이며, 이 컴퓨터의 논리 코어 수({0}개)를 넘을 수 없습니다. 자동은 다른 프로그램이 쓰지 않는 코어를 사용하므로, 바쁜 코어 하나 때문에 모든 토큰이 지연되지 않습니다</translation>
    </message>
    <message>
        <source> MiB of RAM</source>
        <translation> MiB (RAM)</translation>
    </message>
    <message>
        <source>keep none</source>
        <translation>보관 안 함</translation>
    </message>
    <message>
        <source>The KV caches of recently used chats are kept in RAM, so going back to one reads only your new message; the oldest are dropped beyond this size</source>
        <translation>최근에 쓴 채팅의 KV 캐시를 RAM에 보관하므로, 그 채팅으로 돌아가면 새 메시지만 읽습니다. 이 크기를 넘으면 가장 오래된 것부터 버립니다</translation>
    </message>
    <message>
        <source>Automatic (the system&apos;s language)</source>
        <translation>자동 (시스템 언어)</translation>
    </message>
    <message>
        <source>A new language applies after Headroom restarts.</source>
        <translation>새 언어는 Headroom을 다시 시작한 뒤 적용됩니다.</translation>
    </message>
    <message>
        <source>System (the desktop&apos;s)</source>
        <translation>시스템 (데스크톱 설정)</translation>
    </message>
    <message>
        <source>Light</source>
        <translation>라이트</translation>
    </message>
    <message>
        <source>Dark</source>
        <translation>다크</translation>
    </message>
    <message>
        <source>Light or dark window; System follows the desktop&apos;s setting</source>
        <translation>밝은 창 또는 어두운 창. 시스템은 데스크톱 설정을 따릅니다</translation>
    </message>
    <message>
        <source> % of the context window</source>
        <translation> % (컨텍스트 창 기준)</translation>
    </message>
    <message>
        <source>Fold the oldest turns into the summary once the prompt fills this much of its budget; 100 % = only what no longer fits</source>
        <translation>프롬프트가 예산의 이만큼을 채우면 가장 오래된 턴을 요약으로 접습니다. 100 % = 더 이상 들어가지 않는 것만</translation>
    </message>
    <message numerus="yes">
        <source> newest turns</source>
        <translation>
            <numerusform> 개의 최신 턴</numerusform>
        </translation>
    </message>
    <message>
        <source>These turns are never folded into the summary, not by &quot;Summarize now&quot; either</source>
        <translation>이 턴들은 &quot;지금 요약&quot;으로도 요약에 접히지 않습니다</translation>
    </message>
</context>
<context>
    <name>SourceDialog</name>
    <message>
        <source>excerpt {0}</source>
        <translation>발췌 {0}</translation>
    </message>
    <message>
        <source>page {0}</source>
        <translation>{0}쪽</translation>
    </message>
    <message>
        <source>characters {0}–{1}</source>
        <translation>{0}–{1}번째 글자</translation>
    </message>
    <message>
        <source>Source: {0}</source>
        <translation>출처: {0}</translation>
    </message>
    <message>
        <source>Excerpt text</source>
        <translation>발췌 본문</translation>
    </message>
</context>
<context>
    <name>SourcesLine</name>
    <message>
        <source>{0} (removed attachment)</source>
        <translation>{0} (삭제된 첨부 파일)</translation>
    </message>
    <message>
        <source>{0}, page {1}</source>
        <translation>{0}, {1}쪽</translation>
    </message>
    <message>
        <source>Sources: {0}</source>
        <translation>출처: {0}</translation>
    </message>
    <message>
        <source>The document excerpts this answer was given; click one to read it</source>
        <translation>이 답변에 주어진 문서 발췌입니다. 누르면 읽을 수 있습니다</translation>
    </message>
</context>
<context>
    <name>Splash</name>
    <message>
        <source>Starting Headroom…</source>
        <translation>Headroom을 시작하는 중…</translation>
    </message>
</context>
<context>
    <name>Summary</name>
    <message>
        <source>Summary: {0}</source>
        <translation>요약: {0}</translation>
    </message>
    <message>
        <source>Older turns leave the window without a summary: this model&apos;s context is too small to write one.</source>
        <translation>이전 턴은 요약 없이 창에서 빠집니다: 이 모델의 컨텍스트는 요약을 쓰기에 너무 작습니다.</translation>
    </message>
</context>
<context>
    <name>SummaryBlock</name>
    <message>
        <source>Earlier in this conversation</source>
        <translation>이 대화의 앞부분</translation>
    </message>
    <message>
        <source>Turns that no longer fit in the model&apos;s context window are folded into this summary,
written by the model itself. It is sent with every message in place of those turns,
so correcting it changes what the assistant remembers.</source>
        <translation>모델의 컨텍스트 창에 더 이상 들어가지 않는 턴은 모델이 직접 쓴 이 요약으로 접힙니다.
요약은 그 턴들 대신 모든 메시지와 함께 전송되므로,
요약을 고치면 어시스턴트가 기억하는 내용이 바뀝니다.</translation>
    </message>
    <message>
        <source>Edit</source>
        <translation>편집</translation>
    </message>
    <message>
        <source>Correct the summary the assistant keeps of earlier turns</source>
        <translation>어시스턴트가 기억하는 이전 턴의 요약 고치기</translation>
    </message>
    <message>
        <source>Summarizing earlier turns…</source>
        <translation>이전 턴을 요약하는 중…</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>취소</translation>
    </message>
    <message>
        <source>Stop writing the summary; the turns stay in the window for now</source>
        <translation>요약 작성을 멈춥니다. 턴은 당분간 창에 남습니다</translation>
    </message>
    <message>
        <source>Ctrl+Enter to save · Esc to cancel</source>
        <translation>Ctrl+Enter로 저장 · Esc로 취소</translation>
    </message>
    <message>
        <source>Save</source>
        <translation>저장</translation>
    </message>
    <message numerus="yes">
        <source>{0} turns folded in</source>
        <translation>
            <numerusform>턴 {0}개 접힘</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>{0} tokens</source>
        <translation>
            <numerusform>{0} 토큰</numerusform>
        </translation>
    </message>
    <message>
        <source>{0} / {1} tokens</source>
        <translation>{0} / {1} 토큰</translation>
    </message>
</context>
<context>
    <name>SummaryVerdict</name>
    <message numerus="yes">
        <source>nothing to fold: the last %n turns stay as they are</source>
        <translation>
            <numerusform>접을 내용이 없습니다: 마지막 %n개 턴은 그대로 둡니다</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>TokenMeter</name>
    <message numerus="yes">
        <source>{0} tokens: no room left beside max new tokens</source>
        <translation>
            <numerusform>{0} 토큰: 최대 새 토큰 수 때문에 남는 자리가 없음</numerusform>
        </translation>
    </message>
    <message>
        <source>{0} / {1} tokens in context</source>
        <translation>컨텍스트 {0} / {1} 토큰</translation>
    </message>
    <message numerus="yes">
        <source>%n turns in window</source>
        <translation>
            <numerusform>창 안의 턴 %n개</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n folded into summary</source>
        <translation>
            <numerusform>%n개 요약으로 접힘</numerusform>
        </translation>
    </message>
    <message>
        <source>≈{0} for pinned notes</source>
        <translation>고정 메모 ≈{0}</translation>
    </message>
    <message>
        <source>Tokens the next prompt takes (system prompt, summary, recent turns, files attached
to the next message) out of the budget left after reserving room for the answer
and the summary.</source>
        <translation>다음 프롬프트(시스템 프롬프트, 요약, 최근 턴, 다음 메시지에 첨부한 파일)가 차지하는 토큰 수 /
답변과 요약을 위한 자리를 뺀 뒤 남은 예산.</translation>
    </message>
    <message>
        <source>The newest message does not fit: shorten it or raise the context size.</source>
        <translation>가장 최근 메시지가 들어가지 않습니다. 메시지를 줄이거나 컨텍스트 크기를 늘리세요.</translation>
    </message>
    <message numerus="yes">
        <source>{0} tokens left: the oldest turns will soon be folded into the summary.</source>
        <translation>
            <numerusform>{0} 토큰 남음: 곧 가장 오래된 턴이 요약으로 접힙니다.</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>Turns</name>
    <message>
        <source>Waiting for the summary of earlier turns to be written; this answer starts right after it. Stop cancels it.</source>
        <translation>이전 턴의 요약이 끝나기를 기다리는 중입니다. 요약이 끝나면 바로 답변을 시작합니다. 중지하면 취소됩니다.</translation>
    </message>
    <message>
        <source>Waiting for the summary of “{0}” to be written; this answer starts right after it. Stop cancels it.</source>
        <translation>“{0}”의 요약이 끝나기를 기다리는 중입니다. 요약이 끝나면 바로 답변을 시작합니다. 중지하면 취소됩니다.</translation>
    </message>
    <message>
        <source>Wait for the answer being written to end, or stop it.</source>
        <translation>쓰고 있는 답변이 끝나기를 기다리거나 중지하세요.</translation>
    </message>
    <message>
        <source>The model is still loading; send when it is ready.</source>
        <translation>모델을 아직 불러오는 중입니다. 준비되면 보내세요.</translation>
    </message>
    <message>
        <source>No model is open yet: open one with Open model…, then send.</source>
        <translation>아직 열린 모델이 없습니다. 모델 열기…로 모델을 연 다음 보내세요.</translation>
    </message>
    <message>
        <source>An answer is still being written in “{0}”; send when it finishes, or stop it.</source>
        <translation>“{0}”에서 아직 답변을 쓰는 중입니다. 끝나면 보내거나, 답변을 중지하세요.</translation>
    </message>
    <message>
        <source>An answer is still being written in another chat; send when it finishes, or stop it.</source>
        <translation>다른 채팅에서 아직 답변을 쓰는 중입니다. 끝나면 보내거나, 답변을 중지하세요.</translation>
    </message>
    <message>
        <source>{0} is still being read: send again when it is ready</source>
        <translation>{0}을(를) 아직 읽는 중입니다. 준비되면 다시 보내세요</translation>
    </message>
    <message>
        <source>Your earlier message got no answer, so it was taken out of the chat; its text and files are back in the message box.</source>
        <translation>앞서 보낸 메시지는 답변을 받지 못해 채팅에서 뺐습니다. 그 내용과 첨부 파일은 메시지 입력란에 다시 넣어 두었습니다.</translation>
    </message>
    <message>
        <source>Your earlier message got no answer, so it was taken out of the chat; its text is back in the message box.</source>
        <translation>앞서 보낸 메시지는 답변을 받지 못해 채팅에서 뺐습니다. 그 내용은 메시지 입력란에 다시 넣어 두었습니다.</translation>
    </message>
    <message>
        <source>Wait for the reply to end before summarizing.</source>
        <translation>요약하기 전에 답변이 끝날 때까지 기다리세요.</translation>
    </message>
    <message numerus="yes">
        <source>Nothing to summarize yet: the last {0} turns always stay as they are.</source>
        <translation>
            <numerusform>아직 요약할 것이 없습니다. 마지막 턴 {0}개는 항상 그대로 남습니다.</numerusform>
        </translation>
    </message>
    <message>
        <source>before it started</source>
        <translation>시작하기 전</translation>
    </message>
    <message>
        <source>Max new tokens is now {0} (Settings), so the conversation keeps {1} tokens of the {2}-token context.</source>
        <translation>최대 새 토큰 수가 이제 {0}입니다(설정). {2} 토큰 컨텍스트 중 {1} 토큰이 대화에 남습니다.</translation>
    </message>
    <message>
        <source>Your message is attached as {0}. Write your question about it and send it.</source>
        <translation>메시지를 {0} 파일로 첨부했습니다. 이 내용에 대한 질문을 써서 보내세요.</translation>
    </message>
    <message>
        <source>max new tokens reached</source>
        <translation>최대 새 토큰 수에 도달함</translation>
    </message>
    <message>
        <source>remote: {0}</source>
        <translation>원격: {0}</translation>
    </message>
    <message>
        <source>The last answer did not finish: Headroom stopped, or the model failed, while it was being written.</source>
        <translation>마지막 답변이 끝나지 않았습니다. 답변을 쓰는 동안 Headroom이 멈췄거나 모델이 실패했습니다.</translation>
    </message>
</context>
<context>
    <name>UndoNotice</name>
    <message>
        <source>Undo</source>
        <translation>실행 취소</translation>
    </message>
    <message>
        <source>Put the removed file back</source>
        <translation>뺀 파일을 되돌립니다</translation>
    </message>
    <message>
        <source>Removed {0}</source>
        <translation>{0}을(를) 뺐습니다</translation>
    </message>
</context>
<context>
    <name>VramPanel</name>
    <message>
        <source>No memory sample yet</source>
        <translation>아직 메모리 측정값 없음</translation>
    </message>
    <message>
        <source>Save diagnostics…</source>
        <translation>진단 보고서 저장…</translation>
    </message>
    <message>
        <source>Write a report (memory summary, model, recent turns&apos; projected vs measured peaks) to attach to a bug report</source>
        <translation>버그 신고에 첨부할 보고서(메모리 요약, 모델, 최근 턴의 예측 대비 실측 최대치)를 씁니다</translation>
    </message>
    <message>
        <source>VRAM</source>
        <translation>VRAM</translation>
    </message>
    <message>
        <source>Memory — RSS / system memory</source>
        <translation>메모리 — RSS / 시스템 메모리</translation>
    </message>
    <message>
        <source>Sampling memory ≈4 times a second…</source>
        <translation>메모리를 1초에 약 4번 측정하는 중…</translation>
    </message>
    <message numerus="yes">
        <source>{0} + {1} tokens is more than this chat&apos;s context of {2} tokens: no turn runs at this size.</source>
        <translation>
            <numerusform>{0} + {1} 토큰은 이 채팅의 컨텍스트 {2} 토큰보다 많습니다: 이 크기로 실행되는 턴은 없습니다.</numerusform>
        </translation>
    </message>
    <message>
        <source>Drag a slider to see a turn&apos;s peak at other sizes; a message you send is projected before it runs.</source>
        <translation>슬라이더를 끌면 다른 크기에서 턴의 최대치를 볼 수 있습니다. 보낸 메시지는 실행 전에 예측됩니다.</translation>
    </message>
    <message numerus="yes">
        <source>(%n threads)</source>
        <translation>
            <numerusform>(스레드 %n개)</numerusform>
        </translation>
    </message>
    <message>
        <source>Drag a slider to see this turn&apos;s peak at other sizes.</source>
        <translation>슬라이더를 끌어 다른 크기에서 이번 턴의 최대치를 확인하세요.</translation>
    </message>
    <message>
        <source>RSS / system memory</source>
        <translation>RSS / 시스템 메모리</translation>
    </message>
    <message>
        <source>KV cache {0}</source>
        <translation>KV 캐시 {0}</translation>
    </message>
    <message>
        <source>unknown</source>
        <translation>알 수 없음</translation>
    </message>
    <message>
        <source>Allocated {0} · reserved {1} · peak {2}</source>
        <translation>할당 {0} · 예약 {1} · 최대 {2}</translation>
    </message>
    <message>
        <source>RSS {0} · peak RSS {1}</source>
        <translation>RSS {0} · 최대 RSS {1}</translation>
    </message>
    <message>
        <source>No turn running.</source>
        <translation>실행 중인 턴 없음.</translation>
    </message>
    <message>
        <source>A message is projected when you send it.</source>
        <translation>메시지는 보낼 때 예측됩니다.</translation>
    </message>
    <message>
        <source>Projected peak {0} ± {1} (±{2} of the turn)</source>
        <translation>예측 최대치 {0} ± {1} (턴의 ±{2})</translation>
    </message>
    <message>
        <source>needs {0} of {1} free (margin {2})</source>
        <translation>여유 {1} 중 {0} 필요 (안전 여유 {2})</translation>
    </message>
    <message>
        <source>KV +{0} · prefill +{1} ± {2} → peak {3}, headroom {4} ({5}): {6}</source>
        <translation>KV +{0} · 프리필 +{1} ± {2} → 최대 {3}, 여유 {4} ({5}): {6}</translation>
    </message>
</context>
<context>
    <name>WhatIfControl</name>
    <message>
        <source>Context length (history + prompt), tokens: what if the conversation held this many tokens when the turn starts</source>
        <translation>컨텍스트 길이(기록 + 프롬프트), 토큰: 턴이 시작될 때 대화가 이만큼의 토큰을 담고 있다면</translation>
    </message>
    <message>
        <source>max_new_tokens: what if the answer could run this long</source>
        <translation>max_new_tokens: 답변이 이만큼 길어질 수 있다면</translation>
    </message>
    <message>
        <source>Load a model to try other sizes.</source>
        <translation>다른 크기를 시험하려면 모델을 불러오세요.</translation>
    </message>
    <message>
        <source>Reset</source>
        <translation>초기화</translation>
    </message>
    <message>
        <source>Back to the pending turn&apos;s context and max_new_tokens</source>
        <translation>대기 중인 턴의 컨텍스트와 max_new_tokens로 되돌리기</translation>
    </message>
    <message>
        <source>What if…</source>
        <translation>가정해 보기…</translation>
    </message>
    <message>
        <source>Context</source>
        <translation>컨텍스트</translation>
    </message>
    <message>
        <source>New tokens</source>
        <translation>새 토큰</translation>
    </message>
</context>
<context>
    <name>WindowMenus</name>
    <message>
        <source>&amp;New chat</source>
        <translation>새 채팅(&amp;N)</translation>
    </message>
    <message>
        <source>&amp;Open model…</source>
        <translation>모델 열기(&amp;O)…</translation>
    </message>
    <message>
        <source>&amp;Export conversation…</source>
        <translation>대화 내보내기(&amp;E)…</translation>
    </message>
    <message>
        <source>&amp;Quit</source>
        <translation>끝내기(&amp;Q)</translation>
    </message>
    <message>
        <source>&amp;Copy last answer</source>
        <translation>마지막 답변 복사(&amp;C)</translation>
    </message>
    <message>
        <source>&amp;Find conversations…</source>
        <translation>대화 찾기(&amp;F)…</translation>
    </message>
    <message>
        <source>S&amp;top the answer</source>
        <translation>답변 멈추기(&amp;T)</translation>
    </message>
    <message>
        <source>&amp;Settings…</source>
        <translation>설정(&amp;S)…</translation>
    </message>
    <message>
        <source>&amp;Keyboard shortcuts</source>
        <translation>키보드 단축키(&amp;K)</translation>
    </message>
    <message>
        <source>&amp;About Headroom</source>
        <translation>Headroom 정보(&amp;A)</translation>
    </message>
    <message>
        <source>&amp;File</source>
        <translation>파일(&amp;F)</translation>
    </message>
    <message>
        <source>&amp;Edit</source>
        <translation>편집(&amp;E)</translation>
    </message>
    <message>
        <source>&amp;View</source>
        <translation>보기(&amp;V)</translation>
    </message>
    <message>
        <source>&amp;Help</source>
        <translation>도움말(&amp;H)</translation>
    </message>
    <message>
        <source>Memory</source>
        <translation>메모리</translation>
    </message>
    <message>
        <source>Show or hide the memory panel</source>
        <translation>메모리 패널을 보이거나 숨깁니다</translation>
    </message>
    <message>
        <source>Send the message</source>
        <translation>메시지 보내기</translation>
    </message>
    <message>
        <source>Enter</source>
        <translation>Enter 키</translation>
    </message>
    <message>
        <source>New line in the message</source>
        <translation>메시지 안에서 줄 바꿈</translation>
    </message>
    <message>
        <source>Shift+Enter</source>
        <translation>Shift+Enter 키</translation>
    </message>
    <message>
        <source>Save an edited message</source>
        <translation>편집한 메시지 저장</translation>
    </message>
    <message>
        <source>Ctrl+Enter</source>
        <translation>Ctrl+Enter 키</translation>
    </message>
    <message>
        <source>Keyboard shortcuts</source>
        <translation>키보드 단축키</translation>
    </message>
</context>
<context>
    <name>_UndoLabel</name>
    <message>
        <source>Deleted “{0}”</source>
        <translation>“{0}” 삭제됨</translation>
    </message>
</context>
</TS>
