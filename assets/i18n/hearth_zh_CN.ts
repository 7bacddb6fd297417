<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_CN">
<context>
    <name></name>
    <message>
        <source>The model could not be found.</source>
        <translation type="vanished">找不到模型。</translation>
    </message>
    <message>
        <source>This model format or architecture is not supported.</source>
        <translation type="vanished">不支持此模型格式或架构。</translation>
    </message>
    <message>
        <source>The model file is damaged or incomplete.</source>
        <translation type="vanished">模型文件已损坏或不完整。</translation>
    </message>
    <message>
        <source>There is not enough memory for this model.</source>
        <translation type="vanished">内存不足，无法加载此模型。</translation>
    </message>
    <message>
        <source>The model could not be loaded.</source>
        <translation type="vanished">无法加载模型。</translation>
    </message>
    <message>
        <source>The conversation is too long for this model&apos;s context.</source>
        <translation type="vanished">对话过长，超出了此模型的上下文长度。</translation>
    </message>
    <message>
        <source>A setting is out of range.</source>
        <translation type="vanished">某项设置超出了允许范围。</translation>
    </message>
    <message>
        <source>The server could not be reached.</source>
        <translation type="vanished">无法连接到服务器。</translation>
    </message>
    <message>
        <source>The server refused the request.</source>
        <translation type="vanished">服务器拒绝了请求。</translation>
    </message>
    <message>
        <source>The engine has shut down.</source>
        <translation type="vanished">推理引擎已关闭。</translation>
    </message>
    <message>
        <source>The model reported a problem.</source>
        <translation type="vanished">模型报告了一个问题。</translation>
    </message>
    <message>
        <source>Your conversations could not be saved or read.</source>
        <translation type="vanished">无法保存或读取你的对话。</translation>
    </message>
    <message>
        <source>This file cannot be imported.</source>
        <translation type="vanished">无法导入此文件。</translation>
    </message>
    <message>
        <source>A file could not be read or written.</source>
        <translation type="vanished">无法读取或写入文件。</translation>
    </message>
    <message>
        <source>Something went wrong.</source>
        <translation type="vanished">出现了问题。</translation>
    </message>
    <message>
        <source>Hearth</source>
        <translation type="vanished">Hearth</translation>
    </message>
    <message>
        <source>Copy</source>
        <translation type="vanished">复制</translation>
    </message>
    <message>
        <source>image</source>
        <translation type="vanished">图片</translation>
    </message>
    <message>
        <source>writing…</source>
        <translation type="vanished">正在生成…</translation>
    </message>
    <message>
        <source>failed: {0}</source>
        <translation type="vanished">失败：{0}</translation>
    </message>
    <message>
        <source>{0:.2f} s to first token</source>
        <translation type="vanished">首个 token 用时 {0:.2f} 秒</translation>
    </message>
    <message>
        <source>{0:.1f} tok/s</source>
        <translation type="vanished">{0:.1f} token/秒</translation>
    </message>
    <message>
        <source>{0} tokens</source>
        <translation type="vanished">{0} 个 token</translation>
    </message>
    <message>
        <source>stopped at the token limit</source>
        <translation type="vanished">已达到 token 上限而停止</translation>
    </message>
    <message>
        <source>stopped</source>
        <translation type="vanished">已停止</translation>
    </message>
    <message>
        <source>settings changed while writing</source>
        <translation type="vanished">生成过程中更改了设置</translation>
    </message>
    <message>
        <source>(not recorded)</source>
        <translation type="vanished">（未记录）</translation>
    </message>
    <message>
        <source>Settings: {0}</source>
        <translation type="vanished">设置：{0}</translation>
    </message>
    <message>
        <source>From token {0}: {1}</source>
        <translation type="vanished">从第 {0} 个 token 起：{1}</translation>
    </message>
    <message>
        <source>Model: {0}</source>
        <translation type="vanished">模型：{0}</translation>
    </message>
    <message>
        <source>Finish reason: {0}</source>
        <translation type="vanished">结束原因：{0}</translation>
    </message>
    <message>
        <source>Error: {0}</source>
        <translation type="vanished">错误：{0}</translation>
    </message>
</context>
<context>
    <name>Accessibility</name>
    <message>
        <location filename="../../app/views/accessibility.py" line="+42"/>
        <source>Conversation</source>
        <translation>对话内容</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Message</source>
        <translation>消息</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>System prompt</source>
        <translation>系统提示词</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Chats</source>
        <translation>对话列表</translation>
    </message>
    <message>
        <location line="+90"/>
        <source>Clear</source>
        <translation>清除</translation>
    </message>
</context>
<context>
    <name>Application</name>
    <message>
        <location filename="../../app/model_loading.py" line="+159"/>
        <source>The local API server starts when a local model is loaded.</source>
        <translation>加载本地模型后，本地 API 服务器才会启动。</translation>
    </message>
    <message>
        <location filename="../../app/application.py" line="+235"/>
        <source>Exported {0} chat(s) to {1}</source>
        <translation>已将 {0} 个对话导出到 {1}</translation>
    </message>
    <message>
        <location line="+16"/>
        <source>Imported {0} chat(s).</source>
        <translation>已导入 {0} 个对话。</translation>
    </message>
    <message>
        <source>Model unloaded after {0} minutes unused; the next message reloads it.</source>
        <translation type="vanished">模型闲置 {0} 分钟后已卸载；下一条消息会重新加载它。</translation>
    </message>
</context>
<context>
    <name>ApprovalDialog</name>
    <message>
        <location filename="../../app/views/tools/approval_dialog.py" line="+33"/>
        <source>Run a tool?</source>
        <translation>运行工具？</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>The model wants to run {0} from the MCP server {1}.</source>
        <translation>模型想运行 MCP 服务器 {1} 上的 {0}。</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>Arguments:</source>
        <translation>参数：</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Allow once</source>
        <translation>允许一次</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Always allow {0}</source>
        <translation>始终允许 {0}</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Deny</source>
        <translation>拒绝</translation>
    </message>
</context>
<context>
    <name>AttachmentBar</name>
    <message>
        <location filename="../../app/views/documents/attachment_bar.py" line="+59"/>
        <source>{0} tokens</source>
        <translation>{0} 个词元</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Remove attachment {0}</source>
        <translation>移除附件 {0}</translation>
    </message>
    <message>
        <location line="+19"/>
        <source>about {0} of {1} tokens (estimated)</source>
        <translation>约 {0} / {1} 个词元（估算）</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>fits: {0} of {1} tokens</source>
        <translation>可容纳：{0} / {1} 个词元</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>too long to send whole: {0} of {1} tokens; the best passages go with each question</source>
        <translation>太长，无法整篇发送：{0} / {1} 个词元；每个问题会附上最相关的段落</translation>
    </message>
</context>
<context>
    <name>CatalogueTab</name>
    <message>
        <location filename="../../app/views/models/catalogue.py" line="+75"/>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Verdict</source>
        <translation>结论</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>RAM needed of available</source>
        <translation>所需内存 / 可用内存</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Fast path</source>
        <translation>快速路径</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Speed</source>
        <translation>速度</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Recommended file</source>
        <translation>推荐文件</translation>
    </message>
    <message>
        <location line="+72"/>
        <source>Checking which models fit this computer…</source>
        <translation>正在检查哪些模型适合这台电脑…</translation>
    </message>
    <message>
        <location line="+33"/>
        <source>The Hub cannot be reached, so these verdicts are estimates from the catalogue. Downloads need a connection, or a mirror in the Hub tab.</source>
        <translation>无法连接 Hub，以下结论是根据目录估算的。下载需要网络连接，或在“Hub”标签页中设置镜像。</translation>
    </message>
    <message>
        <location line="+11"/>
        <source>Verdicts for this computer: {0} of RAM available now. The recommended file is the best quant that fits.</source>
        <translation>针对这台电脑的结论：当前可用内存 {0}。推荐文件是能放得下的最佳量化版本。</translation>
    </message>
    <message>
        <location line="+15"/>
        <source>Checking…</source>
        <translation>检查中…</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Download…</source>
        <translation>下载…</translation>
    </message>
    <message>
        <location line="+28"/>
        <source>reasoning</source>
        <translation>推理</translation>
    </message>
    <message>
        <location line="+17"/>
        <source>{0}B parameters</source>
        <translation>{0}B 参数</translation>
    </message>
    <message>
        <location line="+19"/>
        <source>can see: downloads with its vision projector</source>
        <translation>可识图：与其视觉投影器一同下载</translation>
    </message>
    <message>
        <location line="-32"/>
        <source>recommended</source>
        <translation>推荐</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>{0}B parameters, {1}B used per token</source>
        <translation>{0}B 参数，每个 token 用到 {1}B</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>Licence: {0}</source>
        <translation>许可证：{0}</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>its own terms: read them before commercial use</source>
        <translation>有自己的条款：商用前请先阅读</translation>
    </message>
    <message>
        <source>text only in Hearth until images are supported</source>
        <translation type="vanished">Hearth 支持图像之前仅用于文本</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>{0} (estimate)</source>
        <translation>{0}（估算）</translation>
    </message>
    <message>
        <location line="+10"/>
        <source>{0} · {1}</source>
        <translation>{0} · {1}</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>+ projector {0}</source>
        <translation>+ 投影器 {0}</translation>
    </message>
    <message>
        <location line="+11"/>
        <source>The Hub must be reachable to download.</source>
        <translation>需要能连接 Hub 才能下载。</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Unavailable</source>
        <translation>不可用</translation>
    </message>
</context>
<context>
    <name>ChatSession</name>
    <message>
        <source>The model is still loading; send the pictures then.</source>
        <translation type="vanished">模型仍在加载中，请在加载完成后再发送图片。</translation>
    </message>
    <message>
        <location filename="../../app/chat/session.py" line="+139"/>
        <source>Open a model that can see to send the pictures.</source>
        <translation>请打开一个能识图的模型再发送图片。</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>This model cannot read pictures: {reason}.</source>
        <translation>此模型无法读取图片：{reason}。</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>Stop the current reply first.</source>
        <translation>请先停止当前回复。</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>The model is still loading.</source>
        <translation>模型仍在加载中。</translation>
    </message>
    <message>
        <location filename="../../app/chat/model_loading.py" line="+48"/>
        <source>Stop the current reply before switching models.</source>
        <translation>切换模型前请先停止当前回复。</translation>
    </message>
    <message>
        <location line="+55"/>
        <source>Your waiting message was kept as a draft, not sent.</source>
        <translation>等待中的消息已保留为草稿，未发送。</translation>
    </message>
    <message>
        <source>{0} oldest messages did not fit the context and were left out.</source>
        <translation type="vanished">最早的 {0} 条消息超出了上下文长度，已被省略。</translation>
    </message>
</context>
<context>
    <name>ChineseModelHint</name>
    <message>
        <location filename="../../app/views/chat/chinese_model_hint.py" line="+39"/>
        <source>The built-in model is small and barely knows Chinese: its Chinese replies are often nonsense. Qwen3.5 from the catalogue answers Chinese well.</source>
        <translation>内置模型很小，几乎不懂中文，中文回答常常不通。目录里的 Qwen3.5 中文很好。</translation>
    </message>
    <message>
        <location line="+10"/>
        <source>Get Qwen3.5…</source>
        <translation>获取 Qwen3.5…</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Dismiss</source>
        <translation>不再提示</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Do not show this again</source>
        <translation>以后不再显示此提示</translation>
    </message>
</context>
<context>
    <name>ChineseOptionsBox</name>
    <message>
        <location filename="../../app/views/dialogs/chinese_options.py" line="+29"/>
        <source>Chinese replies</source>
        <translation>中文回复</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Convert replies to</source>
        <translation>回复转换为</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Full-width punctuation</source>
        <translation>全角标点</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Half-width , . ! ? ; : between Chinese characters become full-width.</source>
        <translation>汉字之间的半角 , . ! ? ; : 改为全角。</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Corner-bracket quotes 「」</source>
        <translation>直角引号「」</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>“ ” and ‘ ’ become 「 」 and 『 』; always on for Traditional replies.</source>
        <translation>“ ” 和 ‘ ’ 改为 「 」 和 『 』；繁体回复始终开启。</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Space between Chinese and Latin</source>
        <translation>中英文之间加空格</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Script</source>
        <translation>字形</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Applied to this chat&apos;s replies as they stream; code is kept.</source>
        <translation>在本对话的回复流式输出时应用；代码保持原样。</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>Off</source>
        <translation>关闭</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Auto: follow the question</source>
        <translation>自动：跟随提问</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Traditional (Taiwan)</source>
        <translation>繁体（台湾）</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Traditional (Hong Kong)</source>
        <translation>繁体（香港）</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Simplified</source>
        <translation>简体</translation>
    </message>
</context>
<context>
    <name>CollectionsButton</name>
    <message>
        <location filename="../../app/views/documents/collections_button.py" line="+27"/>
        <location line="+55"/>
        <source>Collections</source>
        <translation>文档集</translation>
    </message>
    <message>
        <location line="-18"/>
        <source>{0} (removed)</source>
        <translation>{0}（已移除）</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>No collections yet</source>
        <translation>还没有文档集</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Manage collections…</source>
        <translation>管理文档集…</translation>
    </message>
    <message>
        <location line="+11"/>
        <source>Document collections this chat searches with each question</source>
        <translation>此对话每次提问时检索的文档集</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Collections ({0})</source>
        <translation>文档集（{0}）</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>This chat searches: {0}</source>
        <translation>此对话检索：{0}</translation>
    </message>
</context>
<context>
    <name>CollectionsWindow</name>
    <message>
        <location filename="../../app/views/documents/collections_window.py" line="+54"/>
        <source>Document collections</source>
        <translation>文档集</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>A collection is a folder of documents indexed on this computer. Choose it in a chat (the Collections button beside Attach) and every question searches it; the reply cites what it used. Changed files are indexed again by themselves.</source>
        <translation>文档集是在本机建立索引的一个文档文件夹。在对话中选择它（“附加”旁的“文档集”按钮）后，每次提问都会检索它，回复会注明所用的出处。文件更改后会自动重新索引。</translation>
    </message>
    <message>
        <location line="+11"/>
        <source>Collection</source>
        <translation>文档集</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Files</source>
        <translation>文件</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Chunks</source>
        <translation>片段</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Languages</source>
        <translation>语言</translation>
    </message>
    <message>
        <location line="+1"/>
        <location line="+6"/>
        <source>Status</source>
        <translation>状态</translation>
    </message>
    <message>
        <location line="-6"/>
        <source>Folders</source>
        <translation>文件夹</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>File</source>
        <translation>文件</translation>
    </message>
    <message>
        <location line="+10"/>
        <source>Add folder…</source>
        <translation>添加文件夹…</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Rescan</source>
        <translation>重新扫描</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Remove</source>
        <translation>移除</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Close</source>
        <translation>关闭</translation>
    </message>
    <message>
        <location line="+65"/>
        <source>⚠ {0}: its embedding model, {1}, does not cover {2}, so searching those passages by meaning works poorly (keyword search still finds them). Pick a multilingual embedding model that covers them, such as {3}, and index the collection again.</source>
        <translation>⚠ {0}：它的嵌入模型 {1} 不支持{2}，按语义搜索这些片段效果很差（关键词搜索仍能找到它们）。请选择一个支持这些语言的多语言嵌入模型（例如 {3}），然后重新索引这个文档集。</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>⚠ {0}: its embedding model, {1}, does not cover {2}, so searching those passages by meaning works poorly (keyword search still finds them). Pick an embedding model whose languages include them and index the collection again.</source>
        <translation>⚠ {0}：它的嵌入模型 {1} 不支持{2}，按语义搜索这些片段效果很差（关键词搜索仍能找到它们）。请选择一个支持这些语言的嵌入模型，然后重新索引这个文档集。</translation>
    </message>
    <message>
        <location line="+20"/>
        <source>Indexing {0} of {1}: {2}</source>
        <translation>正在索引第 {0} 个，共 {1} 个：{2}</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Indexing…</source>
        <translation>正在索引…</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>{0} skipped</source>
        <translation>跳过 {0} 个</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>{0} missing</source>
        <translation>缺失 {0} 个</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>{0} failed</source>
        <translation>失败 {0} 个</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Up to date</source>
        <translation>已是最新</translation>
    </message>
    <message>
        <location line="+15"/>
        <source>skipped: {0}</source>
        <translation>已跳过：{0}</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>failed: {0}</source>
        <translation>失败：{0}</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>missing: {0}</source>
        <translation>缺失：{0}</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>1 chunk</source>
        <translation>1 个片段</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>{0} chunks</source>
        <translation>{0} 个片段</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>Add a folder of documents</source>
        <translation>添加文档文件夹</translation>
    </message>
    <message>
        <location line="+11"/>
        <source>New collection</source>
        <translation>新建文档集</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Name:</source>
        <translation>名称：</translation>
    </message>
    <message>
        <location line="+13"/>
        <source>Indexing {0}…</source>
        <translation>正在索引 {0}…</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>Remove collection</source>
        <translation>移除文档集</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Forget the collection {0}? The files stay on disk.</source>
        <translation>移除文档集 {0}？文件仍保留在磁盘上。</translation>
    </message>
</context>
<context>
    <name>Composer</name>
    <message>
        <location filename="../../app/views/chat/composer.py" line="+114"/>
        <source>Message Hearth…  (Enter to send, Shift+Enter for a new line)</source>
        <translation>给 Hearth 发消息…（Enter 发送，Shift+Enter 换行）</translation>
    </message>
    <message>
        <location line="+5"/>
        <location line="+160"/>
        <source>Send</source>
        <translation>发送</translation>
    </message>
    <message>
        <location line="-154"/>
        <source>Think</source>
        <translation>思考</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Let the model think before it answers</source>
        <translation>让模型先思考再回答</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Thinking on or off</source>
        <translation>开启或关闭思考</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Attach…</source>
        <translation>附加…</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Attach files (or drop them on the window)</source>
        <translation>附加文件（或拖放到窗口上）</translation>
    </message>
    <message>
        <location line="+1"/>
        <location line="+68"/>
        <source>Attach files</source>
        <translation>附加文件</translation>
    </message>
    <message>
        <location line="-64"/>
        <source>Image…</source>
        <translation>图片…</translation>
    </message>
    <message>
        <location line="+1"/>
        <location line="+72"/>
        <source>Attach images</source>
        <translation>附加图片</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Images ({0});;All files (*)</source>
        <translation>图片 ({0});;所有文件 (*)</translation>
    </message>
    <message>
        <location line="+11"/>
        <source>Pasted image</source>
        <translation>粘贴的图片</translation>
    </message>
    <message>
        <location line="+15"/>
        <source>This model cannot read images: {0}</source>
        <translation>此模型无法读取图片：{0}</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Attach images (or drop or paste them into the message)</source>
        <translation>附加图片（也可以拖放或粘贴到消息中）</translation>
    </message>
    <message>
        <location line="+28"/>
        <source>Not sent</source>
        <translation>未发送</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Waiting…</source>
        <translation>等待中…</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Stop</source>
        <translation>停止</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Reading images…</source>
        <translation>正在读取图片…</translation>
    </message>
</context>
<context>
    <name>ConversationList</name>
    <message>
        <location filename="../../app/listmodels/conversations.py" line="+56"/>
        <source>Untitled</source>
        <translation>未命名</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Pinned: {0}</source>
        <translation>已置顶：{0}</translation>
    </message>
</context>
<context>
    <name>CrashDialog</name>
    <message>
        <location filename="../../app/views/dialogs/crash.py" line="+37"/>
        <source>Hearth closed unexpectedly</source>
        <translation>Hearth 意外关闭</translation>
    </message>
    <message>
        <location line="+15"/>
        <source>Hearth stopped because of an error last time. The report below stays on this computer; you can copy it into a bug report.
{path}</source>
        <translation>Hearth 上次因错误而停止。下面的报告只保存在这台电脑上；你可以把它复制到错误报告中。
{path}</translation>
    </message>
    <message>
        <location line="+19"/>
        <source>Open folder</source>
        <translation>打开文件夹</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Copy</source>
        <translation>复制</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Dismiss</source>
        <translation>关闭</translation>
    </message>
    <message>
        <location line="+16"/>
        <source>Could not read {path}: {error}</source>
        <translation>无法读取 {path}：{error}</translation>
    </message>
</context>
<context>
    <name>DownloadDialog</name>
    <message>
        <location filename="../../app/views/models/download_dialog.py" line="+70"/>
        <source>Download model</source>
        <translation>下载模型</translation>
    </message>
    <message>
        <location line="+19"/>
        <source>Ready to download.</source>
        <translation>准备下载。</translation>
    </message>
    <message>
        <location line="+11"/>
        <source>{0} · {1}</source>
        <translation>{0} · {1}</translation>
    </message>
    <message>
        <location line="+10"/>
        <source>with its vision projector {0} ({1}), so the model can see</source>
        <translation>连同其视觉投影器 {0}（{1}），让模型能识图</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>Cancel</source>
        <translation>取消</translation>
    </message>
    <message>
        <location line="+1"/>
        <location line="+34"/>
        <source>Resume</source>
        <translation>继续</translation>
    </message>
    <message>
        <location line="-33"/>
        <source>Enter Hub token…</source>
        <translation>输入 Hub 令牌…</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Use this model</source>
        <translation>使用此模型</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Close</source>
        <translation>关闭</translation>
    </message>
    <message>
        <location line="+31"/>
        <source>Download</source>
        <translation>下载</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>{0} of {1}</source>
        <translation>{0} / {1}</translation>
    </message>
    <message>
        <location line="+13"/>
        <source>Downloading…</source>
        <translation>正在下载…</translation>
    </message>
    <message>
        <location line="+47"/>
        <source>Its vision projector, verified too: {0}</source>
        <translation>其视觉投影器也已校验：{0}</translation>
    </message>
    <message>
        <source>Checking free disk space…</source>
        <translation type="vanished">正在检查可用磁盘空间…</translation>
    </message>
    <message>
        <location line="-43"/>
        <source>Checking sha256…</source>
        <translation>正在校验 sha256…</translation>
    </message>
    <message>
        <source>Moving the file into the models folder…</source>
        <translation type="vanished">正在把文件移入模型文件夹…</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Pausing…</source>
        <translation>正在暂停…</translation>
    </message>
    <message>
        <location line="+20"/>
        <source>Checking free disk space and any part already downloaded…</source>
        <translation>正在检查可用磁盘空间和已下载的部分…</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>Paused. The part already downloaded is kept; Resume continues it.</source>
        <translation>已暂停。已下载的部分会保留，点“继续”接着下载。</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>Downloaded and verified (sha256). Saved to {0}</source>
        <translation>已下载并通过校验（sha256）。保存在 {0}</translation>
    </message>
</context>
<context>
    <name>EditDialog</name>
    <message>
        <location filename="../../app/views/dialogs/common.py" line="+128"/>
        <source>Edit message</source>
        <translation>编辑消息</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>Send as new branch</source>
        <translation>作为新分支发送</translation>
    </message>
</context>
<context>
    <name>EndpointsDialog</name>
    <message>
        <location filename="../../app/views/dialogs/endpoints.py" line="+59"/>
        <source>Remote endpoints</source>
        <translation>远程端点</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>New</source>
        <translation>新建</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Remove</source>
        <translation>删除</translation>
    </message>
    <message>
        <location line="+33"/>
        <source>Keep the key for this session only</source>
        <translation>仅在本次会话中保留密钥</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Forget saved key</source>
        <translation>忘记已保存的密钥</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>List models</source>
        <translation>列出模型</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Name</source>
        <translation>名称</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Base URL</source>
        <translation>基础 URL</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Server kind</source>
        <translation>服务器类型</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>API key</source>
        <translation>API 密钥</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Save</source>
        <translation>保存</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Test connection</source>
        <translation>测试连接</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Use this endpoint</source>
        <translation>使用此端点</translation>
    </message>
    <message>
        <location line="+17"/>
        <source>Detect automatically</source>
        <translation>自动检测</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Other OpenAI-compatible server</source>
        <translation>其他 OpenAI 兼容服务器</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Hearth</source>
        <translation>Hearth</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>vLLM</source>
        <translation>vLLM</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>llama.cpp server</source>
        <translation>llama.cpp 服务器</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Ollama</source>
        <translation>Ollama</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Text Generation Inference</source>
        <translation>Text Generation Inference</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>OpenAI</source>
        <translation>OpenAI</translation>
    </message>
    <message>
        <location line="+40"/>
        <source>Keys cannot be saved: {reason}. A key you type is kept only until Hearth quits.</source>
        <translation>无法保存密钥：{reason}。你输入的密钥只会保留到 Hearth 退出为止。</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Keys are saved in the system keyring, never in Hearth&apos;s files.</source>
        <translation>密钥保存在系统密钥环中，绝不会写入 Hearth 的文件。</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>(a key is set — type to replace it)</source>
        <translation>（已设置密钥——输入新密钥即可替换）</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>(none)</source>
        <translation>（无）</translation>
    </message>
    <message>
        <location line="+57"/>
        <source>Saved “{name}”.</source>
        <translation>已保存“{name}”。</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>The key was removed.</source>
        <translation>密钥已删除。</translation>
    </message>
    <message>
        <location line="+19"/>
        <source>Connected, but the server does not list “{model}”.</source>
        <translation>已连接，但服务器没有列出“{model}”。</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>Listing models is not available here.</source>
        <translation>此处无法列出模型。</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Connecting to {url}…</source>
        <translation>正在连接 {url}…</translation>
    </message>
    <message numerus="yes">
        <location line="+12"/>
        <source>Connected: the server offers %n model(s).</source>
        <translation>
            <numerusform>已连接：服务器提供 %n 个模型。</numerusform>
        </translation>
    </message>
    <message>
        <location line="+41"/>
        <source>{problem}. The key is kept for this session only.</source>
        <translation>{problem}。密钥仅在本次会话中保留。</translation>
    </message>
</context>
<context>
    <name>Errors</name>
    <message>
        <location filename="../../app/views/dialogs/common.py" line="-90"/>
        <source>The model could not be found.</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>找不到模型。</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>This model format or architecture is not supported.</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>不支持此模型格式或架构。</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>The model file is damaged or incomplete.</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>模型文件已损坏或不完整。</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>There is not enough memory for this model.</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>内存不足，无法加载此模型。</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>The model could not be loaded.</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>无法加载模型。</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>The conversation is too long for this model&apos;s context.</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>对话过长，超出了此模型的上下文长度。</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>A setting is out of range.</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>某项设置超出了允许范围。</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>The server could not be reached.</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>无法连接到服务器。</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>The server refused the request.</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>服务器拒绝了请求。</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>The engine has shut down.</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>推理引擎已关闭。</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>The model reported a problem.</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>模型报告了一个问题。</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Your conversations could not be saved or read.</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>无法保存或读取你的对话。</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>A file could not be read or written.</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>无法读取或写入文件。</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Something went wrong.</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>出现了问题。</translation>
    </message>
    <message>
        <location line="+10"/>
        <source>Hearth</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>Hearth</translation>
    </message>
    <message>
        <location line="-15"/>
        <source>This file cannot be imported.</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>无法导入此文件。</translation>
    </message>
</context>
<context>
    <name>FinalSave</name>
    <message>
        <location filename="../../app/chat/final_save.py" line="+52"/>
        <source>Not saved: {0}. This reply is only on screen; copy it before closing Hearth.</source>
        <translation>未保存：{0}。这条回复只在屏幕上，请在关闭 Hearth 前复制它。</translation>
    </message>
</context>
<context>
    <name>GuardSection</name>
    <message>
        <location filename="../../app/views/models/guards.py" line="+28"/>
        <source>Safety: guard models for the safety review</source>
        <translation>安全：用于安全审查的守卫模型</translation>
    </message>
    <message>
        <location line="+22"/>
        <source>Downloaded</source>
        <translation>已下载</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Download…</source>
        <translation>下载…</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>file name as the publisher usually names it</source>
        <translation>文件名按发布者的惯常命名，未经在线核对</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Licence: {0}</source>
        <translation>许可证：{0}</translation>
    </message>
</context>
<context>
    <name>HubTab</name>
    <message>
        <location filename="../../app/views/models/hub_tab.py" line="+47"/>
        <source>Use hf-mirror.com (China)</source>
        <translation>使用 hf-mirror.com（中国大陆）</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Use huggingface.co</source>
        <translation>使用 huggingface.co</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Save address</source>
        <translation>保存地址</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>Save token</source>
        <translation>保存令牌</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Forget token</source>
        <translation>删除令牌</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>Gated models (Llama, Gemma) need a free Hugging Face account: accept the model&apos;s licence on its Hub page, create a read token under Settings → Access Tokens, and paste it here.</source>
        <translation>受限模型（Llama、Gemma）需要一个免费的 Hugging Face 账号：在模型的 Hub 页面上接受其许可协议，在 Settings → Access Tokens 中创建一个只读令牌，然后粘贴到这里。</translation>
    </message>
    <message>
        <location line="+11"/>
        <source>Hub address</source>
        <translation>Hub 地址</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Hub token</source>
        <translation>Hub 令牌</translation>
    </message>
    <message>
        <location line="+22"/>
        <source>(a token is set — type to replace it)</source>
        <translation>（已设置令牌——输入新令牌即可替换）</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>(none)</source>
        <translation>（无）</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Tokens are saved in the system keyring, never in Hearth&apos;s files.</source>
        <translation>令牌保存在系统密钥环中，绝不写入 Hearth 的文件。</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>No keyring ({0}): a token is kept only until Hearth quits.</source>
        <translation>没有密钥环（{0}）：令牌只保留到 Hearth 退出为止。</translation>
    </message>
    <message>
        <location line="+19"/>
        <source>The address must start with http:// or https://.</source>
        <translation>地址必须以 http:// 或 https:// 开头。</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Using {0}.</source>
        <translation>正在使用 {0}。</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>The token was saved.</source>
        <translation>令牌已保存。</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>The token is kept for this session only.</source>
        <translation>令牌仅在本次运行期间保留。</translation>
    </message>
    <message>
        <location line="+15"/>
        <source>Send the Hub token to this mirror?</source>
        <translation>要把 Hub 令牌发送到这个镜像吗？</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Your Hub token was made for huggingface.co. {0} is run by others: send it there only if you trust it (gated models there need it).</source>
        <translation>你的 Hub 令牌是为 huggingface.co 设置的。{0} 由他人运营：只有信任它时才发送（那里的受限模型需要令牌）。</translation>
    </message>
    <message>
        <location line="+16"/>
        <source>The token goes to {0}.</source>
        <translation>令牌会发送到 {0}。</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>The token is not sent to {0}.</source>
        <translation>令牌不会发送到 {0}。</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>The token was removed.</source>
        <translation>令牌已删除。</translation>
    </message>
</context>
<context>
    <name>ImageChip</name>
    <message>
        <location filename="../../app/views/chat/image_chip.py" line="+63"/>
        <source>reading…</source>
        <translation>读取中…</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>The picture is being read and checked</source>
        <translation>正在读取并检查这张图片</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>How many tokens this picture may take: more reads small text better, takes more of the context and longer to encode</source>
        <translation>这张图片最多可占用的 token 数：越多越能看清小字，但会占用更多上下文，编码也更久</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Image token budget</source>
        <translation>图片 token 预算</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>Remove this image</source>
        <translation>移除这张图片</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Remove image {0}</source>
        <translation>移除图片 {0}</translation>
    </message>
    <message>
        <location line="+52"/>
        <source>up to {0}</source>
        <translation>最多 {0}</translation>
    </message>
    <message>
        <location line="+1"/>
        <source> (default)</source>
        <translation>（默认）</translation>
    </message>
    <message>
        <location line="+29"/>
        <source>≈ {0} tokens</source>
        <translation>≈ {0} 个 token</translation>
    </message>
</context>
<context>
    <name>ImageChips</name>
    <message>
        <location filename="../../app/views/chat/image_chips.py" line="+40"/>
        <source>this model has no vision projector</source>
        <translation>此模型没有视觉投影器</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>this model has no vision projector — download its mmproj</source>
        <translation>此模型没有视觉投影器——请下载它的 mmproj 文件</translation>
    </message>
    <message>
        <location line="+88"/>
        <source>Images cannot be sent to this model: {0}</source>
        <translation>无法向此模型发送图片：{0}</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>The message is waiting for the model: add pictures after it is sent.</source>
        <translation>消息正在等待模型：请在发送后再添加图片。</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>Pasted image</source>
        <translation>粘贴的图片</translation>
    </message>
    <message>
        <location line="+42"/>
        <source>{0} cannot be attached: {1}</source>
        <translation>无法附加 {0}：{1}</translation>
    </message>
</context>
<context>
    <name>ImageViewer</name>
    <message>
        <location filename="../../app/views/chat/image_viewer.py" line="+28"/>
        <source>This image can no longer be read: {0}</source>
        <translation>这张图片已无法读取：{0}</translation>
    </message>
</context>
<context>
    <name>InputMethodNotice</name>
    <message>
        <location filename="../../app/views/chat/input_method_notice.py" line="+26"/>
        <location line="+12"/>
        <source>Chinese input</source>
        <translation>中文输入</translation>
    </message>
    <message>
        <location line="-10"/>
        <source>Typing Chinese needs one more package</source>
        <translation>输入中文还需要安装一个软件包</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Your input method (fcitx5) is running, but Hearth&apos;s Qt has no module to reach it, so typing Chinese will not work here. Install it, then restart Hearth:

{0}</source>
        <translation>你的输入法（fcitx5）正在运行，但 Hearth 使用的 Qt 缺少连接它的模块，因此这里无法输入中文。请安装后重新启动 Hearth：

{0}</translation>
    </message>
</context>
<context>
    <name>LoadProgressView</name>
    <message>
        <location filename="../../app/views/chat/load_progress.py" line="+100"/>
        <source>{0}: {1}</source>
        <translation>{0}：{1}</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Finding the model</source>
        <translation>正在查找模型</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Preparing (once)</source>
        <translation>正在准备（仅一次）</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Opening</source>
        <translation>正在打开</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Warming up</source>
        <translation>正在预热</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Ready</source>
        <translation>就绪</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>about {0} min left</source>
        <translation>大约还剩 {0} 分钟</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>about {0} s left</source>
        <translation>大约还剩 {0} 秒</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>{0} s so far</source>
        <translation>已用 {0} 秒</translation>
    </message>
</context>
<context>
    <name>LocalModelsTab</name>
    <message>
        <location filename="../../app/views/models/local.py" line="+146"/>
        <source>Licence stated in the file: {0}.</source>
        <translation>文件中声明的许可证：{0}。</translation>
    </message>
    <message>
        <location line="-83"/>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>From</source>
        <translation>来源</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Architecture</source>
        <translation>架构</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Quant</source>
        <translation>量化</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Size</source>
        <translation>大小</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>RAM needed</source>
        <translation>所需内存</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Last used</source>
        <translation>上次使用</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Images</source>
        <translation>图像</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>Use</source>
        <translation>使用</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Delete…</source>
        <translation>删除…</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Show in folder</source>
        <translation>在文件夹中显示</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Refresh</source>
        <translation>刷新</translation>
    </message>
    <message>
        <location line="+26"/>
        <source>Looking for models…</source>
        <translation>正在查找模型…</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>The models could not be listed: {0}</source>
        <translation>无法列出模型：{0}</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>unreadable</source>
        <translation>无法读取</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Now</source>
        <translation>正在使用</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>can see</source>
        <translation>可识图</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Named in the file: {0}</source>
        <translation>文件内名称：{0}</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Reads images with its vision projector: {0}</source>
        <translation>用其视觉投影器读取图像：{0}</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>This file cannot be used: {0}</source>
        <translation>无法使用此文件：{0}</translation>
    </message>
    <message numerus="yes">
        <location line="+7"/>
        <source>%n model(s) on this computer.</source>
        <translation>
            <numerusform>这台电脑上有 %n 个模型。</numerusform>
        </translation>
    </message>
    <message>
        <location line="+4"/>
        <source>No models yet: download one from the Catalogue tab. They go to {0}</source>
        <translation>还没有模型：请从“目录”标签页下载。模型会保存到 {0}</translation>
    </message>
    <message>
        <location line="+26"/>
        <source>Only models in Hearth&apos;s own folder can be deleted here.</source>
        <translation>这里只能删除 Hearth 自己文件夹中的模型。</translation>
    </message>
    <message>
        <location line="+20"/>
        <source>Delete model</source>
        <translation>删除模型</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Delete {0} ({1}) from this computer?</source>
        <translation>要从这台电脑上删除 {0}（{1}）吗？</translation>
    </message>
    <message>
        <location line="+16"/>
        <source>Not deleted: {0}</source>
        <translation>未删除：{0}</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Deleted {0} and its vision projector {1}.</source>
        <translation>已删除 {0} 及其视觉投影器 {1}。</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Deleted {0}.</source>
        <translation>已删除 {0}。</translation>
    </message>
</context>
<context>
    <name>MainWindow</name>
    <message>
        <location filename="../../app/views/main_window.py" line="+77"/>
        <source>Hearth</source>
        <translation>Hearth</translation>
    </message>
    <message>
        <location line="+62"/>
        <source>Main</source>
        <translation>主工具栏</translation>
    </message>
    <message>
        <location filename="../../app/views/chat/model_menu.py" line="+40"/>
        <source>Model: loading…</source>
        <translation>模型：正在加载…</translation>
    </message>
    <message>
        <location filename="../../app/views/main_window.py" line="+12"/>
        <source>Models…</source>
        <translation>模型…</translation>
    </message>
    <message>
        <location line="+10"/>
        <source>Sampling</source>
        <translation>采样</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Dark / light</source>
        <translation>深色 / 浅色</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>&amp;File</source>
        <translation>文件(&amp;F)</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>New chat</source>
        <translation>新对话</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Import chats…</source>
        <translation>导入对话…</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Export this chat as Markdown…</source>
        <translation>将此对话导出为 Markdown…</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Export this chat as JSON…</source>
        <translation>将此对话导出为 JSON…</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Export all chats as Markdown…</source>
        <translation>将所有对话导出为 Markdown…</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Export all chats as JSON…</source>
        <translation>将所有对话导出为 JSON…</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Quit</source>
        <translation>退出</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>&amp;Edit</source>
        <translation>编辑(&amp;E)</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>&amp;View</source>
        <translation>视图(&amp;V)</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Search chats</source>
        <translation>搜索对话</translation>
    </message>
    <message>
        <location filename="../../app/views/documents/window_documents.py" line="+112"/>
        <location filename="../../app/views/main_window.py" line="+3"/>
        <source>&amp;Tools</source>
        <translation>工具(&amp;T)</translation>
    </message>
    <message>
        <location filename="../../app/views/main_window.py" line="+1"/>
        <source>MCP servers and tools…</source>
        <translation>MCP 服务器和工具…</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Open a chat to export it.</source>
        <translation>请先打开要导出的对话。</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Export into folder</source>
        <translation>导出到文件夹</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Import chats</source>
        <translation>导入对话</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Chats (*.json *.md);;All files (*)</source>
        <translation>对话 (*.json *.md);;所有文件 (*)</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>Undo delete</source>
        <translation>撤销删除</translation>
    </message>
    <message>
        <location filename="../../app/views/chat/model_menu.py" line="+28"/>
        <source>Find and download models…</source>
        <translation>查找和下载模型…</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Bundled model (SmolLM2 135M)</source>
        <translation>内置模型（SmolLM2 135M）</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Open Hugging Face folder…</source>
        <translation>打开 Hugging Face 文件夹…</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Open GGUF file…</source>
        <translation>打开 GGUF 文件…</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Remote endpoints…</source>
        <translation>远程端点…</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Recent</source>
        <translation>最近使用</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>Serve the local engine on http://127.0.0.1:{0}/v1</source>
        <translation>在 http://127.0.0.1:{0}/v1 上提供本地引擎服务</translation>
    </message>
    <message>
        <location filename="../../app/views/main_window.py" line="+74"/>
        <source>API: {0}</source>
        <translation>API：{0}</translation>
    </message>
    <message>
        <location filename="../../app/views/chat/model_menu.py" line="+13"/>
        <source>Open a model folder</source>
        <translation>打开模型文件夹</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>Open a GGUF model</source>
        <translation>打开 GGUF 模型</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>GGUF models (*.gguf)</source>
        <translation>GGUF 模型 (*.gguf)</translation>
    </message>
    <message>
        <location filename="../../app/views/chat/status_bar.py" line="+74"/>
        <source>Ready</source>
        <translation>就绪</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>No model</source>
        <translation>未加载模型</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Loading model…</source>
        <translation>正在加载模型…</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Writing…</source>
        <translation>正在生成…</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Stopping…</source>
        <translation>正在停止…</translation>
    </message>
    <message>
        <location filename="../../app/views/chat/model_menu.py" line="-67"/>
        <source>Model: none — choose one</source>
        <translation>模型：无——请选择一个</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Model: {0}</source>
        <translation>模型：{0}</translation>
    </message>
    <message>
        <location filename="../../app/views/chat/status_bar.py" line="+20"/>
        <source>{0} on {1} ({2}); weights: {3}</source>
        <translation>{0}，运行于 {1}（{2}）；权重：{3}</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>ONNX Runtime kernels</source>
        <translation>ONNX Runtime 内核</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Kernels: {0}</source>
        <translation>内核：{0}</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>can see</source>
        <translation>可识图</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Reads images</source>
        <translation>可读取图像</translation>
    </message>
    <message>
        <location line="+2"/>
        <source> (≈ {0} tokens a typical image)</source>
        <translation>（一张典型图像约 {0} 个 token）</translation>
    </message>
    <message>
        <location line="+24"/>
        <source>Model unloaded after {0} min idle</source>
        <translation>模型闲置 {0} 分钟后已卸载</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Your next message reloads it.</source>
        <translation>发送下一条消息时会重新加载。</translation>
    </message>
    <message>
        <location line="+16"/>
        <source>Context {0} / {1} tokens ({2} restored)</source>
        <translation>上下文 {0} / {1} 个词元（已恢复 {2} 个）</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Context {0} / {1} tokens ({2} cached)</source>
        <translation>上下文 {0} / {1} token（已缓存 {2}）</translation>
    </message>
    <message>
        <location line="+4"/>
        <source> + ≈ {0} for images</source>
        <translation> + 图片约 {0}</translation>
    </message>
    <message>
        <source>Message copied.</source>
        <translation type="vanished">消息已复制。</translation>
    </message>
    <message>
        <source>Message details</source>
        <translation type="vanished">消息详情</translation>
    </message>
    <message>
        <source>Copy</source>
        <translation type="vanished">复制</translation>
    </message>
    <message>
        <source>Select text…</source>
        <translation type="vanished">选择文本…</translation>
    </message>
    <message>
        <source>Copy code block {0}</source>
        <translation type="vanished">复制代码块 {0}</translation>
    </message>
    <message>
        <source>Edit…</source>
        <translation type="vanished">编辑…</translation>
    </message>
    <message>
        <source>Regenerate</source>
        <translation type="vanished">重新生成</translation>
    </message>
    <message>
        <source>Details</source>
        <translation type="vanished">详情</translation>
    </message>
    <message>
        <source>Message</source>
        <translation type="vanished">消息</translation>
    </message>
    <message>
        <source>Code copied.</source>
        <translation type="vanished">代码已复制。</translation>
    </message>
    <message>
        <location filename="../../app/views/main_window.py" line="+76"/>
        <source>Chat moved to the trash.</source>
        <translation>对话已移至回收站。</translation>
    </message>
    <message>
        <source>Precise</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation type="vanished">精确</translation>
    </message>
    <message>
        <source>Balanced</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation type="vanished">均衡</translation>
    </message>
    <message>
        <source>Creative</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation type="vanished">创意</translation>
    </message>
    <message>
        <source>Exported {0} chat(s) to {1}</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation type="vanished">已将 {0} 个对话导出到 {1}</translation>
    </message>
    <message>
        <source>Imported {0} chat(s).</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation type="vanished">已导入 {0} 个对话。</translation>
    </message>
</context>
<context>
    <name>MessageActions</name>
    <message>
        <location filename="../../app/views/chat/message_actions.py" line="+41"/>
        <source>Message copied.</source>
        <translation>消息已复制。</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>Message details</source>
        <translation>消息详情</translation>
    </message>
    <message>
        <location line="+22"/>
        <source>Copy</source>
        <translation>复制</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Select text…</source>
        <translation>选择文本…</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Copy code block {0}</source>
        <translation>复制代码块 {0}</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Edit…</source>
        <translation>编辑…</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Regenerate</source>
        <translation>重新生成</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Details</source>
        <translation>详情</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Message</source>
        <translation>消息</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>Code copied.</source>
        <translation>代码已复制。</translation>
    </message>
</context>
<context>
    <name>MessageDelegate</name>
    <message>
        <location filename="../../app/views/chat/message_delegate.py" line="+175"/>
        <source>Copy</source>
        <translation>复制</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Edit</source>
        <translation>编辑</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Regenerate</source>
        <translation>重新生成</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Continue</source>
        <translation>继续生成</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Details</source>
        <translation>详情</translation>
    </message>
    <message>
        <location line="+146"/>
        <source>You</source>
        <translation>你</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Assistant</source>
        <translation>助手</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>System</source>
        <translation>系统</translation>
    </message>
</context>
<context>
    <name>MessageText</name>
    <message>
        <location filename="../../app/views/chat/message_text.py" line="+82"/>
        <source>Copy</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>复制</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>image</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>图片</translation>
    </message>
    <message>
        <location line="+23"/>
        <source>writing…</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>正在生成…</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>failed: {0}</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>失败：{0}</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>{0:.2f} s to first token</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>首个 token 用时 {0:.2f} 秒</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>{0:.1f} tok/s</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>{0:.1f} token/秒</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>{0} tokens</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>{0} 个 token</translation>
    </message>
    <message>
        <location line="-88"/>
        <source>Prompt tokens</source>
        <translation>提示 token 数</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Cached prompt tokens</source>
        <translation>缓存命中的提示 token 数</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Reply tokens</source>
        <translation>回复 token 数</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Time to first token</source>
        <translation>首个 token 用时</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Prompt speed</source>
        <translation>提示处理速度</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Reply speed</source>
        <translation>回复生成速度</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Total time</source>
        <translation>总用时</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Context window</source>
        <translation>上下文窗口</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Messages left out</source>
        <translation>省略的消息数</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>finished</source>
        <translation>已完成</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>token limit reached</source>
        <translation>已达 token 上限</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>stopped by you</source>
        <translation>已由你停止</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>stopped by the safety review</source>
        <translation>已被安全审查停止</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>(no reply: {0})</source>
        <translation>（无回复：{0}）</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>({0}; the rest was not shown)</source>
        <translation>（{0}；其余内容未显示）</translation>
    </message>
    <message>
        <location line="+15"/>
        <source>… (line shortened; copy shows all)</source>
        <translation>…（此行已截短；复制可得全文）</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>… (message shortened for display; copy shows all)</source>
        <translation>…（消息过长，仅显示部分；复制可得全文）</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>… ({0} more rows; copy shows all)</source>
        <translation>…（另有 {0} 行未显示；复制可得全文）</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>… ({0} more lines; copy shows all)</source>
        <translation>…（另有 {0} 行代码未显示；复制可得全文）</translation>
    </message>
    <message>
        <location line="+31"/>
        <source>stopped at the token limit</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>已达到 token 上限而停止</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>stopped</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>已停止</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>cut off when Hearth closed</source>
        <translation>Hearth 关闭时被中断</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>settings changed while writing</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>生成过程中更改了设置</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>question stopped by the safety review: {0}</source>
        <translation>提问已被安全审查停止：{0}</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>stopped by the safety review: {0}</source>
        <translation>已被安全审查停止：{0}</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>not reviewed: the guard was unavailable</source>
        <translation>未审查：安全模型不可用</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>(not recorded)</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>（未记录）</translation>
    </message>
    <message>
        <location line="+33"/>
        <source>{0}: {1}</source>
        <translation>{0}：{1}</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Settings: {0}</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>设置：{0}</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>From token {0}: {1}</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>从第 {0} 个 token 起：{1}</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>Model: {0}</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>模型：{0}</translation>
    </message>
    <message>
        <location line="+13"/>
        <source>Finish reason: {0}</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>结束原因：{0}</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Error: {0}</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>错误：{0}</translation>
    </message>
    <message>
        <source>temperature</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation type="vanished">温度</translation>
    </message>
    <message>
        <source>top-k</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation type="vanished">top-k</translation>
    </message>
    <message>
        <source>top-p</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation type="vanished">top-p</translation>
    </message>
    <message>
        <source>min-p</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation type="vanished">min-p</translation>
    </message>
    <message>
        <source>repetition penalty</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation type="vanished">重复惩罚</translation>
    </message>
    <message>
        <source>max tokens</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation type="vanished">最大 token 数</translation>
    </message>
    <message>
        <source>seed</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation type="vanished">随机种子</translation>
    </message>
    <message>
        <source>stop</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation type="vanished">停止字符串</translation>
    </message>
</context>
<context>
    <name>Models</name>
    <message>
        <location filename="../../app/views/models/format.py" line="+62"/>
        <source>{0}/s</source>
        <translation>{0}/秒</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>estimating time left…</source>
        <translation>正在估算剩余时间…</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>{0} s left</source>
        <translation>还剩 {0} 秒</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>about {0} min left</source>
        <translation>大约还剩 {0} 分钟</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>about {0} h {1} min left</source>
        <translation>大约还剩 {0} 小时 {1} 分钟</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>Fits</source>
        <translation>放得下</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Tight</source>
        <translation>勉强</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Won&apos;t fit</source>
        <translation>放不下</translation>
    </message>
    <message>
        <location line="+10"/>
        <source>{0} of {1}</source>
        <translation>{0} / {1}</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>≈ {0} tok/s</source>
        <translation>≈ {0} 词元/秒</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>Yes</source>
        <translation>是</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>No (slower path)</source>
        <translation>否（较慢路径）</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Never</source>
        <translation>从未</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Hearth</source>
        <translation>Hearth</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Hugging Face Hub</source>
        <translation>Hugging Face Hub</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>File</source>
        <translation>文件</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Loaded now</source>
        <translation>当前已加载</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>This model is gated: accept its licence on the Hub, then enter your Hugging Face token in the Hub tab.</source>
        <translation>此模型受限：请先在 Hub 上接受其许可协议，然后在“Hub”标签页中输入你的 Hugging Face 令牌。</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>The Hub cannot be reached. Check your connection, or set a mirror (for example https://hf-mirror.com) in the Hub tab.</source>
        <translation>无法连接 Hub。请检查网络，或在“Hub”标签页中设置镜像（例如 https://hf-mirror.com）。</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>No such model repository on the Hub (or it is private: a token is needed).</source>
        <translation>Hub 上没有这个模型仓库（或者它是私有的，需要令牌）。</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>The Hub has no such file (404).</source>
        <translation>Hub 上没有这个文件（404）。</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>There is not enough free disk space for this download.</source>
        <translation>磁盘剩余空间不足，无法完成此下载。</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>The downloaded file failed its sha256 check and was deleted. Try again.</source>
        <translation>下载的文件未通过 sha256 校验，已被删除。请重试。</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>This file is not a GGUF model.</source>
        <translation>这个文件不是 GGUF 模型。</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>The download was paused.</source>
        <translation>下载已暂停。</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>The Hub refused the request.</source>
        <translation>Hub 拒绝了请求。</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>A file could not be read or written.</source>
        <translation>无法读取或写入文件。</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Something went wrong: {0}</source>
        <translation>出错了：{0}</translation>
    </message>
</context>
<context>
    <name>ModelsDialog</name>
    <message>
        <location filename="../../app/views/models/dialog.py" line="+67"/>
        <source>Models</source>
        <translation>模型</translation>
    </message>
    <message>
        <location line="+33"/>
        <source>Catalogue</source>
        <translation>目录</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Search the Hub</source>
        <translation>搜索 Hub</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>On this computer</source>
        <translation>这台电脑上</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Hub</source>
        <translation>Hub</translation>
    </message>
    <message>
        <location line="+65"/>
        <source>Unfinished download: {0} ({1} of {2})</source>
        <translation>未完成的下载：{0}（{1} / {2}）</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Resume</source>
        <translation>继续</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Discard</source>
        <translation>丢弃</translation>
    </message>
</context>
<context>
    <name>Organiser</name>
    <message>
        <location filename="../../app/views/chat/organise.py" line="+38"/>
        <source>Show folder</source>
        <translation>显示文件夹</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>All chats</source>
        <translation>全部对话</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Trash</source>
        <translation>回收站</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Temporary</source>
        <translation>临时</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>A new chat that is never saved to disk</source>
        <translation>新建一个从不保存到磁盘的对话</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Temporary chat — not saved</source>
        <translation>临时对话——不会保存</translation>
    </message>
    <message>
        <location line="+44"/>
        <source>Move to folder</source>
        <translation>移到文件夹</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Folder (leave empty for none):</source>
        <translation>文件夹（留空表示不放入文件夹）：</translation>
    </message>
    <message>
        <location line="+51"/>
        <source>Hearth — temporary chat</source>
        <translation>Hearth — 临时对话</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Hearth</source>
        <translation>Hearth</translation>
    </message>
</context>
<context>
    <name>PreferencesDialog</name>
    <message>
        <location filename="../../app/views/dialogs/preferences.py" line="+55"/>
        <source>Preferences</source>
        <translation>偏好设置</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>System size</source>
        <translation>系统大小</translation>
    </message>
    <message>
        <location line="+0"/>
        <source> pt</source>
        <translation> 磅</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Model&apos;s own</source>
        <translation>模型自带</translation>
    </message>
    <message>
        <location line="+1"/>
        <source> tokens</source>
        <translation> 个 token</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Automatic</source>
        <translation>自动</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Never</source>
        <translation>从不</translation>
    </message>
    <message>
        <location line="+1"/>
        <source> min</source>
        <translation> 分钟</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Off</source>
        <translation>关闭</translation>
    </message>
    <message>
        <location line="+0"/>
        <source> GB</source>
        <translation> GB</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Text size</source>
        <translation>文字大小</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Context length</source>
        <translation>上下文长度</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>CPU threads</source>
        <translation>CPU 线程数</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Unload the model after idle</source>
        <translation>闲置后卸载模型</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Saved chat caches (resume at once)</source>
        <translation>保存的对话缓存（立即续接）</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>Context length, threads and saved caches apply when a local model is loaded.</source>
        <translation>上下文长度、线程数和保存的缓存在加载本地模型时生效。</translation>
    </message>
    <message>
        <source>Context length and threads apply when a local model is loaded.</source>
        <translation type="vanished">上下文长度和线程数在加载本地模型时生效。</translation>
    </message>
</context>
<context>
    <name>Presets</name>
    <message>
        <location filename="../../app/system/settings.py" line="+348"/>
        <source>Precise</source>
        <translation>精确</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Balanced</source>
        <translation>均衡</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Creative</source>
        <translation>创意</translation>
    </message>
</context>
<context>
    <name>PromptLibraryBar</name>
    <message>
        <location filename="../../app/views/dialogs/prompt_library.py" line="+69"/>
        <source>Saved system prompts</source>
        <translation>已保存的系统提示词</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Saved system prompts: pick one for this chat</source>
        <translation>已保存的系统提示词：为这个对话选择一个</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Manage saved prompts</source>
        <translation>管理已保存的提示词</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Save as a new prompt…</source>
        <translation>另存为新提示词…</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Rename…</source>
        <translation>重命名…</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Delete</source>
        <translation>删除</translation>
    </message>
    <message>
        <location line="+18"/>
        <source>Custom</source>
        <translation>自定义</translation>
    </message>
    <message>
        <location line="+30"/>
        <source>Save system prompt</source>
        <translation>保存系统提示词</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Name:</source>
        <translation>名称：</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>Rename saved prompt</source>
        <translation>重命名已保存的提示词</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>New name:</source>
        <translation>新名称：</translation>
    </message>
</context>
<context>
    <name>QueuedSendBar</name>
    <message>
        <location filename="../../app/views/chat/queued_send.py" line="+30"/>
        <source>Retry</source>
        <translation>重试</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Cancel sending</source>
        <translation>取消发送</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Keep the text in the box without sending it</source>
        <translation>把文字留在输入框中，不发送</translation>
    </message>
    <message>
        <location line="+16"/>
        <source>The model could not be opened: {0}. Your edit is kept: retry, or choose another model.</source>
        <translation>无法打开模型：{0}。您的修改已保留：请重试，或选择其他模型。</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>The model could not be opened: {0}. Your message is kept: retry, or choose another model.</source>
        <translation>无法打开模型：{0}。您的消息已保留：请重试，或选择其他模型。</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Waiting for the model to open… your edit will be sent when ready.</source>
        <translation>正在等待模型打开… 就绪后将发送您的修改。</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Waiting for the model to open… it will be sent when ready.</source>
        <translation>正在等待模型打开… 就绪后将自动发送。</translation>
    </message>
</context>
<context>
    <name>ReplyRun</name>
    <message>
        <location filename="../../app/chat/reply_run.py" line="+86"/>
        <source>{0} oldest messages did not fit the context and were left out.</source>
        <translation>最早的 {0} 条消息超出了上下文长度，已被省略。</translation>
    </message>
    <message>
        <location line="+20"/>
        <source>Stopped: the reply kept repeating “{0}”. A larger model answers better.</source>
        <translation>已停止：回复一直在重复“{0}”。更大的模型回答得更好。</translation>
    </message>
</context>
<context>
    <name>SafetyBox</name>
    <message>
        <location filename="../../app/views/dialogs/safety_options.py" line="+49"/>
        <source>Safety review</source>
        <translation>安全审查</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Review chats (each chat can choose for itself)</source>
        <translation>审查对话（每个对话可自行选择）</translation>
    </message>
    <message>
        <location line="+11"/>
        <source>Qwen3Guard-Gen .gguf file, or served name</source>
        <translation>Qwen3Guard-Gen .gguf 文件或服务中的模型名</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>optional: http://127.0.0.1:8000/v1</source>
        <translation>可选：http://127.0.0.1:8000/v1</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>one word or phrase a line; re: for a pattern</source>
        <translation>每行一个词或短语；以 re: 开头表示正则表达式</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Add a safety system prompt</source>
        <translation>添加安全系统提示</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Strict: stop controversial content too</source>
        <translation>严格：有争议的内容也停止</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Required: stop when the guard is unavailable</source>
        <translation>必需：安全模型不可用时停止</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>Guard model</source>
        <translation>安全模型</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Guard endpoint</source>
        <translation>安全模型端点</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Blocklist</source>
        <translation>屏蔽词列表</translation>
    </message>
</context>
<context>
    <name>SafetyChoiceBox</name>
    <message>
        <location line="+39"/>
        <source>Safety review</source>
        <translation>安全审查</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Follow Preferences</source>
        <translation>跟随偏好设置</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>On for this chat</source>
        <translation>此对话开启</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Off</source>
        <translation>关闭</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Safety review for this chat</source>
        <translation>此对话的安全审查</translation>
    </message>
</context>
<context>
    <name>SamplingPanel</name>
    <message>
        <location filename="../../app/views/chat/sampling_panel.py" line="+105"/>
        <source>Save as…</source>
        <translation>另存为…</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>random</source>
        <translation>随机</translation>
    </message>
    <message>
        <source>comma-separated, \n for a newline</source>
        <translation type="vanished">以逗号分隔，\n 表示换行</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>e.g. &lt;/s&gt;, \n\n</source>
        <translation>例如 &lt;/s&gt;, \n\n</translation>
    </message>
    <message>
        <location line="+87"/>
        <source>Comma-separated; write \n for a newline, \\ for \.</source>
        <translation>以逗号分隔；用 \n 表示换行，用 \\ 表示 \。</translation>
    </message>
    <message>
        <location line="-83"/>
        <source>You are a helpful assistant.</source>
        <translation>你是一个乐于助人的助手。</translation>
    </message>
    <message>
        <source>Temperature</source>
        <translation type="vanished">温度</translation>
    </message>
    <message>
        <source>Top-k</source>
        <translation type="vanished">Top-k</translation>
    </message>
    <message>
        <source>Top-p</source>
        <translation type="vanished">Top-p</translation>
    </message>
    <message>
        <source>Min-p</source>
        <translation type="vanished">Min-p</translation>
    </message>
    <message>
        <source>Repetition penalty</source>
        <translation type="vanished">重复惩罚</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>Preset</source>
        <translation>预设</translation>
    </message>
    <message>
        <source>Max tokens</source>
        <translation type="vanished">最大 token 数</translation>
    </message>
    <message>
        <source>Seed</source>
        <translation type="vanished">随机种子</translation>
    </message>
    <message>
        <source>Stop strings</source>
        <translation type="vanished">停止字符串</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>Sampling</source>
        <translation>采样</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Changes apply from the next token, even while a reply is written.</source>
        <translation>更改从下一个 token 起生效，即使回复正在生成。</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>System prompt</source>
        <translation>系统提示词</translation>
    </message>
    <message>
        <location line="+47"/>
        <source>The current model&apos;s endpoint ignores {0}.</source>
        <translation>当前模型的端点会忽略 {0}。</translation>
    </message>
    <message>
        <location line="+29"/>
        <source>Custom</source>
        <translation>自定义</translation>
    </message>
    <message>
        <location line="+52"/>
        <source>Save preset</source>
        <translation>保存预设</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Preset name:</source>
        <translation>预设名称：</translation>
    </message>
</context>
<context>
    <name>SamplingParams</name>
    <message>
        <location filename="../../app/views/chat/param_labels.py" line="+17"/>
        <source>Temperature</source>
        <translation>温度</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Top-k</source>
        <translation>Top-k</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Top-p</source>
        <translation>Top-p</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Min-p</source>
        <translation>Min-p</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Repetition penalty</source>
        <translation>重复惩罚</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Presence penalty</source>
        <translation>存在惩罚</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Frequency penalty</source>
        <translation>频率惩罚</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Seed</source>
        <translation>随机种子</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Max tokens</source>
        <translation>最大 token 数</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Stop strings</source>
        <translation>停止字符串</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Beams</source>
        <translation>束数</translation>
    </message>
</context>
<context>
    <name>SearchTab</name>
    <message>
        <location filename="../../app/views/models/search.py" line="+258"/>
        <source>Licence stated in the file: {0}.</source>
        <translation>文件中声明的许可证：{0}。</translation>
    </message>
    <message>
        <source>e.g. qwen2.5 7b instruct, llama 3.2, gemma 3</source>
        <translation type="vanished">例如 qwen2.5 7b instruct、llama 3.2、gemma 3</translation>
    </message>
    <message>
        <location line="-189"/>
        <source>e.g. {0}</source>
        <translation>例如 {0}</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Search the Hub for GGUF models</source>
        <translation>在 Hub 上搜索 GGUF 模型</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Search</source>
        <translation>搜索</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>Repository / file</source>
        <translation>仓库 / 文件</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Quant</source>
        <translation>量化</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Size</source>
        <translation>大小</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Verdict</source>
        <translation>结论</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>RAM needed of available</source>
        <translation>所需内存 / 可用内存</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Fast path</source>
        <translation>快速路径</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Speed</source>
        <translation>速度</translation>
    </message>
    <message>
        <location line="+10"/>
        <source>Download…</source>
        <translation>下载…</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Download with its projector…</source>
        <translation>连同投影器下载…</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>The model and its vision projector (mmproj), so it can read images</source>
        <translation>模型及其视觉投影器（mmproj），使其能读取图像</translation>
    </message>
    <message>
        <location line="+37"/>
        <source>Type a model name to search for.</source>
        <translation>请输入要搜索的模型名称。</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Searching the Hub…</source>
        <translation>正在搜索 Hub…</translation>
    </message>
    <message numerus="yes">
        <location line="+14"/>
        <source>%n download(s)</source>
        <translation>
            <numerusform>%n 次下载</numerusform>
        </translation>
    </message>
    <message>
        <location line="+2"/>
        <source>gated: needs a token</source>
        <translation>受限：需要令牌</translation>
    </message>
    <message numerus="yes">
        <location line="+2"/>
        <source>%n repositories found. Expand one to see its files.</source>
        <translation>
            <numerusform>找到 %n 个仓库。展开一个即可查看其文件。</numerusform>
        </translation>
    </message>
    <message>
        <location line="+15"/>
        <source>Listing the files of {0}…</source>
        <translation>正在列出 {0} 的文件…</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>split into {0} parts</source>
        <translation>分成 {0} 个文件</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>{0} has no GGUF files.</source>
        <translation>{0} 中没有 GGUF 文件。</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Select a file to read its header and check it precisely.</source>
        <translation>选择一个文件，读取其文件头以进行精确检查。</translation>
    </message>
    <message>
        <location line="+11"/>
        <source>Vision projectors (mmproj)</source>
        <translation>视觉投影器（mmproj）</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>let this repo&apos;s models read images</source>
        <translation>让此仓库的模型读取图像</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>vision projector</source>
        <translation>视觉投影器</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>{0} is a vision projector: it lets a model of this repo read images. Download it with a model, or alone for a model you already have.</source>
        <translation>{0} 是视觉投影器：它让此仓库的模型能读取图像。可与模型一同下载，或为已有的模型单独下载。</translation>
    </message>
    <message>
        <location line="+10"/>
        <source>Reading the header of {0}…</source>
        <translation>正在读取 {0} 的文件头…</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>{0}: {1}, {2} parameters, context {3} tokens. {4}</source>
        <translation>{0}：{1}，{2} 参数，上下文 {3} 个词元。{4}</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>{0} (from size)</source>
        <translation>{0}（按大小估算）</translation>
    </message>
</context>
<context>
    <name>ShortcutSheet</name>
    <message>
        <location filename="../../app/views/shortcuts.py" line="+255"/>
        <location line="+4"/>
        <source>Keyboard shortcuts</source>
        <translation>键盘快捷键</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Keys</source>
        <translation>按键</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Action</source>
        <translation>操作</translation>
    </message>
</context>
<context>
    <name>Shortcuts</name>
    <message>
        <location line="-209"/>
        <source>New chat</source>
        <translation>新对话</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Search chats</source>
        <translation>搜索对话</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Send the message</source>
        <translation>发送消息</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>New line in the message</source>
        <translation>在消息中换行</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Stop the reply (in the message box)</source>
        <translation>停止回复（在消息输入框中）</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Rename the chosen chat (in the chat list)</source>
        <translation>重命名选中的对话（在对话列表中）</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Move the chosen chat to the trash (in the chat list)</source>
        <translation>把选中的对话移到回收站（在对话列表中）</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Models</source>
        <translation>模型</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Show or hide the settings panel</source>
        <translation>显示或隐藏设置面板</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Dark / light</source>
        <translation>深色 / 浅色</translation>
    </message>
    <message>
        <location line="+11"/>
        <source>Stop the reply</source>
        <translation>停止回复</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Regenerate the last reply</source>
        <translation>重新生成最后一条回复</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Copy the last reply</source>
        <translation>复制最后一条回复</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Focus the message box</source>
        <translation>聚焦消息输入框</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Previous alternative of the last reply</source>
        <translation>最后一条回复的上一个版本</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Next alternative of the last reply</source>
        <translation>最后一条回复的下一个版本</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>New temporary chat</source>
        <translation>新建临时对话</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Larger text</source>
        <translation>放大文字</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Smaller text</source>
        <translation>缩小文字</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Default text size</source>
        <translation>默认文字大小</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Preferences…</source>
        <translation>偏好设置…</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Keyboard shortcuts</source>
        <translation>键盘快捷键</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>&amp;Help</source>
        <translation>帮助(&amp;H)</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>Preferences</source>
        <translation>偏好设置</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Preferences ({0})</source>
        <translation>偏好设置（{0}）</translation>
    </message>
    <message>
        <location line="+37"/>
        <source>Last reply copied.</source>
        <translation>已复制最后一条回复。</translation>
    </message>
</context>
<context>
    <name>Sidebar</name>
    <message>
        <location filename="../../app/views/chat/sidebar.py" line="+38"/>
        <source>+  New chat</source>
        <translation>+  新对话</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Search all chats…</source>
        <translation>搜索所有对话…</translation>
    </message>
    <message>
        <location line="+32"/>
        <source>Delete</source>
        <translation>删除</translation>
    </message>
    <message>
        <location line="+33"/>
        <source>Unpin</source>
        <translation>取消置顶</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Pin</source>
        <translation>置顶</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Rename</source>
        <translation>重命名</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Move to folder…</source>
        <translation>移到文件夹…</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Move to trash</source>
        <translation>移到回收站</translation>
    </message>
</context>
<context>
    <name>SlowPathNotice</name>
    <message>
        <location filename="../../app/views/chat/slow_path.py" line="+31"/>
        <source>⚠ Slower path</source>
        <translation>⚠ 较慢路径</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>⚠ Running on the slower float32 path</source>
        <translation>⚠ 正在较慢的 float32 路径上运行</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Why, and what to do…</source>
        <translation>原因及解决办法…</translation>
    </message>
    <message>
        <location line="+16"/>
        <source>“{name}” runs on the slower float32 path: {reason}</source>
        <translation>“{name}”正在较慢的 float32 路径上运行：{reason}</translation>
    </message>
    <message>
        <location line="+15"/>
        <source>Slower path</source>
        <translation>较慢路径</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>“{name}” runs on the slower float32 path.</source>
        <translation>“{name}”正在较慢的 float32 路径上运行。</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>Why: {reason}</source>
        <translation>原因：{reason}</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>What you can do: use a GGUF file in Q4_K_M, Q5_K_M, Q6_K or Q8_0 of a supported architecture (Llama, for example). Replies work as they are, only more slowly and with more memory.</source>
        <translation>解决办法：使用受支持架构（例如 Llama）的 Q4_K_M、Q5_K_M、Q6_K 或 Q8_0 格式的 GGUF 文件。回复仍可正常生成，只是更慢，占用的内存也更多。</translation>
    </message>
</context>
<context>
    <name>SourceDialog</name>
    <message>
        <location filename="../../app/views/documents/sources_fold.py" line="+141"/>
        <source>Open file</source>
        <translation>打开文件</translation>
    </message>
    <message>
        <location line="+19"/>
        <source>From the collection {0}: {1}</source>
        <translation>来自文档集 {0}：{1}</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>{0} has been deleted or moved since it was indexed; this is the passage as it was read then.</source>
        <translation>{0} 在索引后已被删除或移动；这是当时读取的段落。</translation>
    </message>
</context>
<context>
    <name>Sources</name>
    <message>
        <location line="-126"/>
        <source>Sources ({0})</source>
        <translation>来源（{0}）</translation>
    </message>
    <message>
        <location line="+52"/>
        <source>{0} tokens</source>
        <translation>{0} 个词元</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Attached: {0}</source>
        <translation>已附加：{0}</translation>
    </message>
</context>
<context>
    <name>StoreProblemDialog</name>
    <message>
        <location filename="../../app/views/dialogs/store_problem.py" line="+40"/>
        <source>Hearth cannot open your conversations</source>
        <translation>Hearth 无法打开你的对话</translation>
    </message>
    <message>
        <location line="+17"/>
        <source>Your conversations were saved by a newer version of Hearth. Update Hearth to open them.</source>
        <translation>你的对话由更新版本的 Hearth 保存。请更新 Hearth 后再打开。</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>The conversation database is damaged or is not a Hearth database, or its folder cannot be written (permissions, a full disk).</source>
        <translation>对话数据库已损坏或不是 Hearth 数据库，或者其所在文件夹无法写入（权限不足或磁盘已满）。</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>You can move the file aside and start with no conversations: it is renamed, never deleted, so it can still be recovered. Or fix the folder and try again.</source>
        <translation>你可以把该文件移到一旁，从空白的对话记录开始：文件只会被重命名，绝不会被删除，之后仍可恢复。也可以修复文件夹后重试。</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Move aside and start fresh</source>
        <translation>移到一旁并重新开始</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Try again</source>
        <translation>重试</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Quit</source>
        <translation>退出</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Open folder</source>
        <translation>打开文件夹</translation>
    </message>
    <message>
        <location line="+21"/>
        <source>The file could not be moved aside: {0}</source>
        <translation>无法将文件移到一旁：{0}</translation>
    </message>
</context>
<context>
    <name>Thinking</name>
    <message>
        <location filename="../../app/views/chat/thinking.py" line="+43"/>
        <source>{0} s</source>
        <translation>{0} 秒</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>{0} min {1} s</source>
        <translation>{0} 分 {1} 秒</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Thinking… {0}</source>
        <translation>思考中… {0}</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Thought for {0}</source>
        <translation>思考了 {0}</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Thinking</source>
        <translation>思考过程</translation>
    </message>
</context>
<context>
    <name>ToolsFold</name>
    <message>
        <location filename="../../app/views/tools/tools_fold.py" line="+21"/>
        <source>ran</source>
        <translation>已运行</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>failed</source>
        <translation>失败</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>denied by you</source>
        <translation>已被你拒绝</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>stopped</source>
        <translation>已停止</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>waiting for approval</source>
        <translation>等待批准</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Tools: {0}</source>
        <translation>工具：{0}</translation>
    </message>
</context>
<context>
    <name>ToolsWindow</name>
    <message>
        <location filename="../../app/views/tools/tools_window.py" line="+56"/>
        <source>Tools (MCP)</source>
        <translation>工具（MCP）</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Save servers</source>
        <translation>保存服务器</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>List tools</source>
        <translation>列出工具</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Server / tool</source>
        <translation>服务器 / 工具</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>All chats</source>
        <translation>所有对话</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>This chat</source>
        <translation>此对话</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Servers (the mcpServers JSON other MCP clients use):</source>
        <translation>服务器（与其他 MCP 客户端相同的 mcpServers JSON）：</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>A tool can do whatever its server can: read or change files, run commands, reach the network. Hearth asks before every call.</source>
        <translation>工具能做其服务器能做的任何事：读取或修改文件、运行命令、访问网络。Hearth 在每次调用前都会询问。</translation>
    </message>
    <message>
        <location line="+24"/>
        <source>Saved.</source>
        <translation>已保存。</translation>
    </message>
    <message>
        <location line="+24"/>
        <source>running</source>
        <translation>运行中</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>not started</source>
        <translation>未启动</translation>
    </message>
</context>
<context>
    <name>TrashDialog</name>
    <message>
        <location filename="../../app/views/dialogs/trash.py" line="+43"/>
        <source>Trash</source>
        <translation>回收站</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Chats in the trash</source>
        <translation>回收站中的对话</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>The trash is empty.</source>
        <translation>回收站是空的。</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Restore</source>
        <translation>恢复</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Delete forever</source>
        <translation>永久删除</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Empty trash</source>
        <translation>清空回收站</translation>
    </message>
    <message>
        <location line="+17"/>
        <source>Untitled</source>
        <translation>无标题</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>{0}  (deleted {1})</source>
        <translation>{0}（删除于 {1}）</translation>
    </message>
    <message>
        <location line="+33"/>
        <source>Erase for good?</source>
        <translation>彻底删除？</translation>
    </message>
    <message>
        <location line="+16"/>
        <source>Erase {0} chat(s)? This cannot be undone.</source>
        <translation>要彻底删除 {0} 个对话吗？此操作无法撤销。</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Erase every chat in the trash? This cannot be undone.</source>
        <translation>要彻底删除回收站中的所有对话吗？此操作无法撤销。</translation>
    </message>
</context>
<context>
    <name>WhySlow</name>
    <message>
        <location filename="../../app/chat/slowness.py" line="+75"/>
        <source>Close programs you do not need, or choose a smaller model or quantisation.</source>
        <translation>关闭不需要的程序，或选用更小的模型或量化版本。</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>The computer is swapping: {0} MB went to and from the disk since the last look.</source>
        <translation>电脑正在使用交换空间：自上次查看以来，有 {0} MB 在内存和磁盘之间换入换出。</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>Memory is nearly full: Hearth uses {0} GB and only {1} GB is left.</source>
        <translation>内存快满了：Hearth 占用 {0} GB，只剩 {1} GB 可用。</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>Another program is using the processor: Hearth measured it runs best on {0} of {1} cores now.</source>
        <translation>另一个程序正在占用处理器：Hearth 测得目前用 {1} 个核心中的 {0} 个运行最快。</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Pause or close the busy program (a build, a video, another model); Hearth takes the core back by itself.</source>
        <translation>暂停或关闭占用处理器的程序（编译、视频、另一个模型）；Hearth 会自动重新用上这个核心。</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>The model runs on the slower float32 path: {0}</source>
        <translation>模型正在较慢的 float32 路径上运行：{0}</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Use a GGUF file in Q4_K_M, Q5_K_M, Q6_K or Q8_0 of a supported architecture.</source>
        <translation>请使用受支持架构的 Q4_K_M、Q5_K_M、Q6_K 或 Q8_0 格式 GGUF 文件。</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Hearth&apos;s own kernel does not run on this processor: {0}</source>
        <translation>Hearth 自己的内核无法在这颗处理器上运行：{0}</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Replies still work on ONNX Runtime&apos;s kernels; a smaller model is faster.</source>
        <translation>回复仍可使用 ONNX Runtime 的内核生成；更小的模型会更快。</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>The disk is nearly full: {0} GB free where Hearth keeps its chats and caches.</source>
        <translation>磁盘快满了：Hearth 存放对话和缓存的磁盘只剩 {0} GB。</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Free some space on that disk: without room the caches that spare re-reading a chat are not saved.</source>
        <translation>请在该磁盘上腾出空间：空间不足时，免去重新读取对话的缓存无法保存。</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>The context is full: the {0} oldest messages were left out, and each reply reads the whole context again.</source>
        <translation>上下文已满：最早的 {0} 条消息被略去，而且每次回复都要重新读取整个上下文。</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Start a new chat, or choose a model with a longer context.</source>
        <translation>开始新对话，或选用上下文更长的模型。</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>The last reply ran at {0:.1f} tokens/s; this computer should reach about {1:.1f}.</source>
        <translation>上一条回复的速度为 {0:.1f} token/秒；这台电脑应能达到约 {1:.1f}。</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>If no other cause is listed, close busy programs and ask again; a smaller model is faster.</source>
        <translation>如果没有列出其他原因，请关闭繁忙的程序后再问一次；更小的模型会更快。</translation>
    </message>
</context>
<context>
    <name>WhySlowNotice</name>
    <message>
        <location filename="../../app/views/chat/why_slow.py" line="+44"/>
        <location line="+36"/>
        <source>Why is this slow?</source>
        <translation>为什么这么慢？</translation>
    </message>
    <message>
        <location line="-20"/>
        <source>{0}
→ {1}</source>
        <translation>{0}
→ {1}</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Nothing slows Hearth down right now.</source>
        <translation>目前没有什么拖慢 Hearth。</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>Last reply: {0} tokens/s (expected about {1}). Free memory: {2:.1f} GB. Free disk: {3} GB. Cores in use: {4}.</source>
        <translation>上一条回复：{0} token/秒（预计约 {1}）。可用内存：{2:.1f} GB。可用磁盘：{3} GB。使用中的核心：{4}。</translation>
    </message>
</context>
<context>
    <name>WindowDocuments</name>
    <message>
        <location filename="../../app/views/documents/window_documents.py" line="-22"/>
        <source>Document collections…</source>
        <translation>文档集…</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>Collection {0}: {1}</source>
        <translation>文档集 {0}：{1}</translation>
    </message>
</context>
<context>
    <name>self.window</name>
    <message>
        <source>Exported {0} chat(s) to {1}</source>
        <translation type="vanished">已将 {0} 个对话导出到 {1}</translation>
    </message>
    <message>
        <source>Imported {0} chat(s).</source>
        <translation type="vanished">已导入 {0} 个对话。</translation>
    </message>
</context>
</TS>
