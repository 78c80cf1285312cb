<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="en_US">
<context>
    <name>AdmissionDialog</name>
    <message numerus="yes">
        <source>{0} tokens</source>
        <translation>
            <numerusform>{0} token</numerusform>
            <numerusform>{0} tokens</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>Attachments</name>
    <message numerus="yes">
        <source>{0} characters{1}</source>
        <translation>
            <numerusform>{0} character{1}</numerusform>
            <numerusform>{0} characters{1}</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>{0}: whole file, {1} tokens</source>
        <translation>
            <numerusform>{0}: whole file, {1} token</numerusform>
            <numerusform>{0}: whole file, {1} tokens</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>{0}: too large for this turn ({1} tokens): retrieving {2} of {3} excerpts, {4} tokens</source>
        <translation>
            <numerusform>{0}: too large for this turn ({1} tokens): retrieving {2} of {3} excerpts, {4} token</numerusform>
            <numerusform>{0}: too large for this turn ({1} tokens): retrieving {2} of {3} excerpts, {4} tokens</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>ChatBar</name>
    <message numerus="yes">
        <source>The turns before the last %n are already in the summary</source>
        <translation>
            <numerusform>The turns before the last one are already in the summary</numerusform>
            <numerusform>The turns before the last %n are already in the summary</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>Nothing to summarize yet: the last %n turns always stay as they are (Settings: keep the last turns verbatim)</source>
        <translation>
            <numerusform>Nothing to summarize yet: the last turn always stays as it is (Settings: keep the last turns verbatim)</numerusform>
            <numerusform>Nothing to summarize yet: the last %n turns always stay as they are (Settings: keep the last turns verbatim)</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>ChatView</name>
    <message numerus="yes">
        <source>Show %n earlier messages</source>
        <translation>
            <numerusform>Show %n earlier message</numerusform>
            <numerusform>Show %n earlier messages</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>ContextChoice</name>
    <message numerus="yes">
        <source> tokens</source>
        <translation>
            <numerusform> token</numerusform>
            <numerusform> tokens</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>As in Settings: {0} tokens</source>
        <translation>
            <numerusform>As in Settings: {0} token</numerusform>
            <numerusform>As in Settings: {0} tokens</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>Auto: fits {0} tokens</source>
        <translation>
            <numerusform>Auto: fits {0} token</numerusform>
            <numerusform>Auto: fits {0} tokens</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>Trained for {0} tokens.</source>
        <translation>
            <numerusform>Trained for {0} token.</numerusform>
            <numerusform>Trained for {0} tokens.</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>A turn that fills more than {0} tokens will be refused for memory (or sent anyway at your risk).</source>
        <translation>
            <numerusform>A turn that fills more than {0} token will be refused for memory (or sent anyway at your risk).</numerusform>
            <numerusform>A turn that fills more than {0} tokens will be refused for memory (or sent anyway at your risk).</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>ConversationList</name>
    <message numerus="yes">
        <source>%n messages · last used {0}</source>
        <translation>
            <numerusform>%n message · last used {0}</numerusform>
            <numerusform>%n messages · last used {0}</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>CrashDialog</name>
    <message numerus="yes">
        <source>%n unexpected errors inside Headroom</source>
        <translation>
            <numerusform>%n unexpected error inside Headroom</numerusform>
            <numerusform>%n unexpected errors inside Headroom</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>DocumentChips</name>
    <message numerus="yes">
        <source>{0} characters</source>
        <translation>
            <numerusform>{0} character</numerusform>
            <numerusform>{0} characters</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>DocumentRefusal</name>
    <message numerus="yes">
        <source>this PDF has no text layer ({0} pages of images or blank pages); Headroom does not read scanned pages</source>
        <translation>
            <numerusform>this PDF has no text layer ({0} page of images or a blank page); Headroom does not read scanned pages</numerusform>
            <numerusform>this PDF has no text layer ({0} pages of images or blank pages); Headroom does not read scanned pages</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>MessageBubble</name>
    <message numerus="yes">
        <source>Reading the prompt… {0} / {1} tokens</source>
        <translation>
            <numerusform>Reading the prompt… {0} / {1} token</numerusform>
            <numerusform>Reading the prompt… {0} / {1} tokens</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>… {0} more characters not shown here (the whole answer is kept: Copy and Export take all of it)</source>
        <translation>
            <numerusform>… {0} more character not shown here (the whole answer is kept: Copy and Export take all of it)</numerusform>
            <numerusform>… {0} more characters not shown here (the whole answer is kept: Copy and Export take all of it)</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>… {0} more characters not shown here (the whole message is kept, but it was not sent)</source>
        <translation>
            <numerusform>… {0} more character not shown here (the whole message is kept, but it was not sent)</numerusform>
            <numerusform>… {0} more characters not shown here (the whole message is kept, but it was not sent)</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>… {0} more characters not shown here (the whole message is kept and sent)</source>
        <translation>
            <numerusform>… {0} more character not shown here (the whole message is kept and sent)</numerusform>
            <numerusform>… {0} more characters not shown here (the whole message is kept and sent)</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>ModelStatusBar</name>
    <message numerus="yes">
        <source>TTFT {0} · {1} tokens</source>
        <translation>
            <numerusform>TTFT {0} · {1} token</numerusform>
            <numerusform>TTFT {0} · {1} tokens</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>TTFT {0} · {1} tok/s · {2} tokens</source>
        <translation>
            <numerusform>TTFT {0} · {1} tok/s · {2} token</numerusform>
            <numerusform>TTFT {0} · {1} tok/s · {2} tokens</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>NoteProposals</name>
    <message numerus="yes">
        <source>%n more after these</source>
        <translation>
            <numerusform>%n more after these</numerusform>
            <numerusform>%n more after these</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>Presets</name>
    <message numerus="yes">
        <source>Imported {0} presets</source>
        <translation>
            <numerusform>Imported {0} preset</numerusform>
            <numerusform>Imported {0} presets</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>Exported {0} presets to {1}</source>
        <translation>
            <numerusform>Exported {0} preset to {1}</numerusform>
            <numerusform>Exported {0} presets to {1}</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>Refusal</name>
    <message numerus="yes">
        <source>The prompt ({0} tokens) plus max new tokens ({1}) is {2} tokens, more than the context limit of {3} tokens; the prompt may use at most {4}.</source>
        <translation>
            <numerusform>The prompt ({0} tokens) plus max new tokens ({1}) is {2} tokens, more than the context limit of {3} token; the prompt may use at most {4}.</numerusform>
            <numerusform>The prompt ({0} tokens) plus max new tokens ({1}) is {2} tokens, more than the context limit of {3} tokens; the prompt may use at most {4}.</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>The new message needs {0} tokens with the system prompt, but the context of {1} tokens minus max new tokens ({2}) and the summary reserve ({3}) leaves {4}.</source>
        <translation>
            <numerusform>The new message needs {0} tokens with the system prompt, but the context of {1} token minus max new tokens ({2}) and the summary reserve ({3}) leaves {4}.</numerusform>
            <numerusform>The new message needs {0} tokens with the system prompt, but the context of {1} tokens minus max new tokens ({2}) and the summary reserve ({3}) leaves {4}.</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>The system prompt takes {0} tokens, but the context of {1} tokens minus max new tokens ({2}) and the summary reserve ({3}) leaves {4} for it and the new message.</source>
        <translation>
            <numerusform>The system prompt takes {0} tokens, but the context of {1} token minus max new tokens ({2}) and the summary reserve ({3}) leaves {4} for it and the new message.</numerusform>
            <numerusform>The system prompt takes {0} tokens, but the context of {1} tokens minus max new tokens ({2}) and the summary reserve ({3}) leaves {4} for it and the new message.</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>This chat&apos;s pinned notes take {0} tokens, but the context of {1} tokens minus max new tokens ({2}) and the summary reserve ({3}) leaves {4} for them, the system prompt and the new message.</source>
        <translation>
            <numerusform>This chat&apos;s pinned notes take {0} tokens, but the context of {1} token minus max new tokens ({2}) and the summary reserve ({3}) leaves {4} for them, the system prompt and the new message.</numerusform>
            <numerusform>This chat&apos;s pinned notes take {0} tokens, but the context of {1} tokens minus max new tokens ({2}) and the summary reserve ({3}) leaves {4} for them, the system prompt and the new message.</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>Shorten it by {0} tokens.</source>
        <translation>
            <numerusform>Shorten it by {0} token.</numerusform>
            <numerusform>Shorten it by {0} tokens.</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>Shorten it by {0} tokens or lower max new tokens.</source>
        <translation>
            <numerusform>Shorten it by {0} token or lower max new tokens.</numerusform>
            <numerusform>Shorten it by {0} tokens or lower max new tokens.</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>Shorten this chat&apos;s pinned notes (Notes, in the chat bar) by {0} tokens.</source>
        <translation>
            <numerusform>Shorten this chat&apos;s pinned notes (Notes, in the chat bar) by {0} token.</numerusform>
            <numerusform>Shorten this chat&apos;s pinned notes (Notes, in the chat bar) by {0} tokens.</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>Shorten the system prompt (Edit → Settings → System prompt) by {0} tokens.</source>
        <translation>
            <numerusform>Shorten the system prompt (Edit → Settings → System prompt) by {0} token.</numerusform>
            <numerusform>Shorten the system prompt (Edit → Settings → System prompt) by {0} tokens.</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>Trim older turns (drop at least {0} tokens)</source>
        <translation>
            <numerusform>Trim older turns (drop at least {0} token)</numerusform>
            <numerusform>Trim older turns (drop at least {0} tokens)</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>ReplyStatsText</name>
    <message numerus="yes">
        <source>{0} tokens</source>
        <translation>
            <numerusform>{0} token</numerusform>
            <numerusform>{0} tokens</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>last part: {0} tokens, {1}</source>
        <translation>
            <numerusform>last part: {0} token, {1}</numerusform>
            <numerusform>last part: {0} tokens, {1}</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>Prompt: {0} tokens ({1} prefilled, {2} reused from the KV cache)</source>
        <translation>
            <numerusform>Prompt: {0} token ({1} prefilled, {2} reused from the KV cache)</numerusform>
            <numerusform>Prompt: {0} tokens ({1} prefilled, {2} reused from the KV cache)</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>Answer: {0} new tokens</source>
        <translation>
            <numerusform>Answer: {0} new token</numerusform>
            <numerusform>Answer: {0} new tokens</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>Answer: {0} new tokens, {1} of them in the last part (Continue)</source>
        <translation>
            <numerusform>Answer: {0} new token, {1} in the last part (Continue)</numerusform>
            <numerusform>Answer: {0} new tokens, {1} of them in the last part (Continue)</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>SettingsDialog</name>
    <message numerus="yes">
        <source> tokens</source>
        <translation>
            <numerusform> token</numerusform>
            <numerusform> tokens</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source> newest turns</source>
        <translation>
            <numerusform> newest turn</numerusform>
            <numerusform> newest turns</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>SummaryBlock</name>
    <message numerus="yes">
        <source>{0} turns folded in</source>
        <translation>
            <numerusform>{0} turn folded in</numerusform>
            <numerusform>{0} turns folded in</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>{0} tokens</source>
        <translation>
            <numerusform>{0} token</numerusform>
            <numerusform>{0} tokens</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>SummaryVerdict</name>
    <message numerus="yes">
        <source>nothing to fold: the last %n turns stay as they are</source>
        <translation>
            <numerusform>nothing to fold: the last turn stays as it is</numerusform>
            <numerusform>nothing to fold: the last %n turns stay as they are</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>TokenMeter</name>
    <message numerus="yes">
        <source>{0} tokens: no room left beside max new tokens</source>
        <translation>
            <numerusform>{0} token: no room left beside max new tokens</numerusform>
            <numerusform>{0} tokens: no room left beside max new tokens</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n turns in window</source>
        <translation>
            <numerusform>%n turn in window</numerusform>
            <numerusform>%n turns in window</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n folded into summary</source>
        <translation>
            <numerusform>%n folded into summary</numerusform>
            <numerusform>%n folded into summary</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>{0} tokens left: the oldest turns will soon be folded into the summary.</source>
        <translation>
            <numerusform>{0} token left: the oldest turns will soon be folded into the summary.</numerusform>
            <numerusform>{0} tokens left: the oldest turns will soon be folded into the summary.</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>Turns</name>
    <message numerus="yes">
        <source>Nothing to summarize yet: the last {0} turns always stay as they are.</source>
        <translation>
            <numerusform>Nothing to summarize yet: the last turn always stays as it is.</numerusform>
            <numerusform>Nothing to summarize yet: the last {0} turns always stay as they are.</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>VramPanel</name>
    <message numerus="yes">
        <source>{0} + {1} tokens is more than this chat&apos;s context of {2} tokens: no turn runs at this size.</source>
        <translation>
            <numerusform>{0} + {1} tokens is more than this chat&apos;s context of {2} token: no turn runs at this size.</numerusform>
            <numerusform>{0} + {1} tokens is more than this chat&apos;s context of {2} tokens: no turn runs at this size.</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>(%n threads)</source>
        <translation>
            <numerusform>(%n thread)</numerusform>
            <numerusform>(%n threads)</numerusform>
        </translation>
    </message>
</context>
</TS>
