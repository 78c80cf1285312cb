<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="en_US">
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
    <name>MessageBubble</name>
    <message numerus="yes">
        <source>… %Ln more characters not shown here (the whole message is kept and sent)</source>
        <translation>
            <numerusform>… %Ln more character not shown here (the whole message is kept and sent)</numerusform>
            <numerusform>… %Ln more characters not shown here (the whole message is kept and sent)</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>ModelStatusBar</name>
    <message numerus="yes">
        <source>TTFT {0} · {1} tok/s · %n tokens</source>
        <translation>
            <numerusform>TTFT {0} · {1} tok/s · %n token</numerusform>
            <numerusform>TTFT {0} · {1} tok/s · %n tokens</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>SummaryBlock</name>
    <message numerus="yes">
        <source>%n turns folded in</source>
        <translation>
            <numerusform>%n turn folded in</numerusform>
            <numerusform>%n turns folded in</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n tokens</source>
        <translation>
            <numerusform>%n token</numerusform>
            <numerusform>%n tokens</numerusform>
        </translation>
    </message>
</context>
<context>
    <name>TokenMeter</name>
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
</context>
</TS>
