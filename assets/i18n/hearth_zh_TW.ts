<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="zh_TW">
<context>
    <name></name>
    <message>
        <source>The model could not be found.</source>
        <translation type="vanished">找不到模型。</translation>
    </message>
    <message>
        <source>This model format or architecture is not supported.</source>
        <translation type="vanished">不支援此模型格式或架構。</translation>
    </message>
    <message>
        <source>The model file is damaged or incomplete.</source>
        <translation type="vanished">模型檔案已損壞或不完整。</translation>
    </message>
    <message>
        <source>There is not enough memory for this model.</source>
        <translation type="vanished">記憶體不足，無法載入此模型。</translation>
    </message>
    <message>
        <source>The model could not be loaded.</source>
        <translation type="vanished">無法載入模型。</translation>
    </message>
    <message>
        <source>The conversation is too long for this model&apos;s context.</source>
        <translation type="vanished">對話過長，超出了此模型的上下文長度。</translation>
    </message>
    <message>
        <source>A setting is out of range.</source>
        <translation type="vanished">某項設定超出了允許範圍。</translation>
    </message>
    <message>
        <source>The server could not be reached.</source>
        <translation type="vanished">無法連線到伺服器。</translation>
    </message>
    <message>
        <source>The server refused the request.</source>
        <translation type="vanished">伺服器拒絕了請求。</translation>
    </message>
    <message>
        <source>The engine has shut down.</source>
        <translation type="vanished">推理引擎已關閉。</translation>
    </message>
    <message>
        <source>The model reported a problem.</source>
        <translation type="vanished">模型報告了一個問題。</translation>
    </message>
    <message>
        <source>Your conversations could not be saved or read.</source>
        <translation type="vanished">無法儲存或讀取你的對話。</translation>
    </message>
    <message>
        <source>This file cannot be imported.</source>
        <translation type="vanished">無法匯入此檔案。</translation>
    </message>
    <message>
        <source>A file could not be read or written.</source>
        <translation type="vanished">無法讀取或寫入檔案。</translation>
    </message>
    <message>
        <source>Something went wrong.</source>
        <translation type="vanished">出現了問題。</translation>
    </message>
    <message>
        <source>Hearth</source>
        <translation type="vanished">Hearth</translation>
    </message>
    <message>
        <source>Copy</source>
        <translation type="vanished">複製</translation>
    </message>
    <message>
        <source>image</source>
        <translation type="vanished">圖片</translation>
    </message>
    <message>
        <source>writing…</source>
        <translation type="vanished">正在生成…</translation>
    </message>
    <message>
        <source>failed: {0}</source>
        <translation type="vanished">失敗：{0}</translation>
    </message>
    <message>
        <source>{0:.2f} s to first token</source>
        <translation type="vanished">首個 token 用時 {0:.2f} 秒</translation>
    </message>
    <message>
        <source>{0:.1f} tok/s</source>
        <translation type="vanished">{0:.1f} token/秒</translation>
    </message>
    <message>
        <source>{0} tokens</source>
        <translation type="vanished">{0} 個 token</translation>
    </message>
    <message>
        <source>stopped at the token limit</source>
        <translation type="vanished">已達到 token 上限而停止</translation>
    </message>
    <message>
        <source>stopped</source>
        <translation type="vanished">已停止</translation>
    </message>
    <message>
        <source>settings changed while writing</source>
        <translation type="vanished">生成過程中更改了設定</translation>
    </message>
    <message>
        <source>(not recorded)</source>
        <translation type="vanished">（未記錄）</translation>
    </message>
    <message>
        <source>Settings: {0}</source>
        <translation type="vanished">設定：{0}</translation>
    </message>
    <message>
        <source>From token {0}: {1}</source>
        <translation type="vanished">從第 {0} 個 token 起：{1}</translation>
    </message>
    <message>
        <source>Model: {0}</source>
        <translation type="vanished">模型：{0}</translation>
    </message>
    <message>
        <source>Finish reason: {0}</source>
        <translation type="vanished">結束原因：{0}</translation>
    </message>
    <message>
        <source>Error: {0}</source>
        <translation type="vanished">錯誤：{0}</translation>
    </message>
</context>
<context>
    <name>Accessibility</name>
    <message>
        <location filename="../../app/views/accessibility.py" line="+42"/>
        <source>Conversation</source>
        <translation>對話內容</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Message</source>
        <translation>訊息</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>System prompt</source>
        <translation>系統提示詞</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Chats</source>
        <translation>對話列表</translation>
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
        <translation>載入本地模型後，本地 API 伺服器才會啟動。</translation>
    </message>
    <message>
        <location filename="../../app/application.py" line="+235"/>
        <source>Exported {0} chat(s) to {1}</source>
        <translation>已將 {0} 個對話匯出到 {1}</translation>
    </message>
    <message>
        <location line="+16"/>
        <source>Imported {0} chat(s).</source>
        <translation>已匯入 {0} 個對話。</translation>
    </message>
    <message>
        <source>Model unloaded after {0} minutes unused; the next message reloads it.</source>
        <translation type="vanished">模型閒置 {0} 分鐘後已解除安裝；下一條訊息會重新載入它。</translation>
    </message>
</context>
<context>
    <name>ApprovalDialog</name>
    <message>
        <location filename="../../app/views/tools/approval_dialog.py" line="+33"/>
        <source>Run a tool?</source>
        <translation>執行工具？</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>The model wants to run {0} from the MCP server {1}.</source>
        <translation>模型想執行 MCP 伺服器 {1} 上的 {0}。</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>Arguments:</source>
        <translation>引數：</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Allow once</source>
        <translation>允許一次</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Always allow {0}</source>
        <translation>始終允許 {0}</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Deny</source>
        <translation>拒絕</translation>
    </message>
</context>
<context>
    <name>AttachmentBar</name>
    <message>
        <location filename="../../app/views/documents/attachment_bar.py" line="+59"/>
        <source>{0} tokens</source>
        <translation>{0} 個詞元</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Remove attachment {0}</source>
        <translation>移除附件 {0}</translation>
    </message>
    <message>
        <location line="+19"/>
        <source>about {0} of {1} tokens (estimated)</source>
        <translation>約 {0} / {1} 個詞元（估算）</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>fits: {0} of {1} tokens</source>
        <translation>可容納：{0} / {1} 個詞元</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>too long to send whole: {0} of {1} tokens; the best passages go with each question</source>
        <translation>太長，無法整篇傳送：{0} / {1} 個詞元；每個問題會附上最相關的段落</translation>
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
        <translation>結論</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>RAM needed of available</source>
        <translation>所需記憶體 / 可用記憶體</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Fast path</source>
        <translation>快速路徑</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Speed</source>
        <translation>速度</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Recommended file</source>
        <translation>推薦檔案</translation>
    </message>
    <message>
        <location line="+72"/>
        <source>Checking which models fit this computer…</source>
        <translation>正在檢查哪些模型適合這臺電腦…</translation>
    </message>
    <message>
        <location line="+33"/>
        <source>The Hub cannot be reached, so these verdicts are estimates from the catalogue. Downloads need a connection, or a mirror in the Hub tab.</source>
        <translation>無法連線 Hub，以下結論是根據目錄估算的。下載需要網路連線，或在「Hub」標籤頁中設定映象。</translation>
    </message>
    <message>
        <location line="+11"/>
        <source>Verdicts for this computer: {0} of RAM available now. The recommended file is the best quant that fits.</source>
        <translation>針對這臺電腦的結論：當前可用記憶體 {0}。推薦檔案是能放得下的最佳量化版本。</translation>
    </message>
    <message>
        <location line="+15"/>
        <source>Checking…</source>
        <translation>檢查中…</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Download…</source>
        <translation>下載…</translation>
    </message>
    <message>
        <location line="+28"/>
        <source>reasoning</source>
        <translation>推理</translation>
    </message>
    <message>
        <location line="+17"/>
        <source>{0}B parameters</source>
        <translation>{0}B 引數</translation>
    </message>
    <message>
        <location line="+19"/>
        <source>can see: downloads with its vision projector</source>
        <translation>可識圖：與其視覺投影器一同下載</translation>
    </message>
    <message>
        <location line="-32"/>
        <source>recommended</source>
        <translation>推薦</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>{0}B parameters, {1}B used per token</source>
        <translation>{0}B 引數，每個 token 用到 {1}B</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>Licence: {0}</source>
        <translation>許可證：{0}</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>its own terms: read them before commercial use</source>
        <translation>有自己的條款：商用前請先閱讀</translation>
    </message>
    <message>
        <source>text only in Hearth until images are supported</source>
        <translation type="vanished">Hearth 支援影像之前僅用於文本</translation>
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
        <translation>需要能連線 Hub 才能下載。</translation>
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
        <translation type="vanished">模型仍在載入中，請在載入完成後再發送圖片。</translation>
    </message>
    <message>
        <location filename="../../app/chat/session.py" line="+139"/>
        <source>Open a model that can see to send the pictures.</source>
        <translation>請開啟一個能識圖的模型再發送圖片。</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>This model cannot read pictures: {reason}.</source>
        <translation>此模型無法讀取圖片：{reason}。</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>Stop the current reply first.</source>
        <translation>請先停止當前回覆。</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>The model is still loading.</source>
        <translation>模型仍在載入中。</translation>
    </message>
    <message>
        <location filename="../../app/chat/model_loading.py" line="+48"/>
        <source>Stop the current reply before switching models.</source>
        <translation>切換模型前請先停止當前回覆。</translation>
    </message>
    <message>
        <location line="+55"/>
        <source>Your waiting message was kept as a draft, not sent.</source>
        <translation>等待中的訊息已保留為草稿，未傳送。</translation>
    </message>
    <message>
        <source>{0} oldest messages did not fit the context and were left out.</source>
        <translation type="vanished">最早的 {0} 條訊息超出了上下文長度，已被省略。</translation>
    </message>
</context>
<context>
    <name>ChineseModelHint</name>
    <message>
        <location filename="../../app/views/chat/chinese_model_hint.py" line="+39"/>
        <source>The built-in model is small and barely knows Chinese: its Chinese replies are often nonsense. Qwen3.5 from the catalogue answers Chinese well.</source>
        <translation>內建模型很小，幾乎不懂中文，中文回答常常不通。目錄裡的 Qwen3.5 中文很好。</translation>
    </message>
    <message>
        <location line="+10"/>
        <source>Get Qwen3.5…</source>
        <translation>獲取 Qwen3.5…</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Dismiss</source>
        <translation>不再提示</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Do not show this again</source>
        <translation>以後不再顯示此提示</translation>
    </message>
</context>
<context>
    <name>ChineseOptionsBox</name>
    <message>
        <location filename="../../app/views/dialogs/chinese_options.py" line="+29"/>
        <source>Chinese replies</source>
        <translation>中文回覆</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Convert replies to</source>
        <translation>回覆轉換為</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Full-width punctuation</source>
        <translation>全形標點</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Half-width , . ! ? ; : between Chinese characters become full-width.</source>
        <translation>漢字之間的半形 , . ! ? ; : 改為全形。</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Corner-bracket quotes 「」</source>
        <translation>直角引號「」</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>“ ” and ‘ ’ become 「 」 and 『 』; always on for Traditional replies.</source>
        <translation>「 」 和 『 』 改為 「 」 和 『 』；繁體回覆始終開啟。</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Space between Chinese and Latin</source>
        <translation>中英文之間加空格</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Script</source>
        <translation>字形</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Applied to this chat&apos;s replies as they stream; code is kept.</source>
        <translation>在本對話的回覆流式輸出時應用；程式碼保持原樣。</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>Off</source>
        <translation>關閉</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Auto: follow the question</source>
        <translation>自動：跟隨提問</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Traditional (Taiwan)</source>
        <translation>繁體（臺灣）</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Traditional (Hong Kong)</source>
        <translation>繁體（香港）</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Simplified</source>
        <translation>簡體</translation>
    </message>
</context>
<context>
    <name>CollectionsButton</name>
    <message>
        <location filename="../../app/views/documents/collections_button.py" line="+27"/>
        <location line="+55"/>
        <source>Collections</source>
        <translation>文件集</translation>
    </message>
    <message>
        <location line="-18"/>
        <source>{0} (removed)</source>
        <translation>{0}（已移除）</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>No collections yet</source>
        <translation>還沒有文件集</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Manage collections…</source>
        <translation>管理文件集…</translation>
    </message>
    <message>
        <location line="+11"/>
        <source>Document collections this chat searches with each question</source>
        <translation>此對話每次提問時檢索的文件集</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Collections ({0})</source>
        <translation>文件集（{0}）</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>This chat searches: {0}</source>
        <translation>此對話檢索：{0}</translation>
    </message>
</context>
<context>
    <name>CollectionsWindow</name>
    <message>
        <location filename="../../app/views/documents/collections_window.py" line="+54"/>
        <source>Document collections</source>
        <translation>文件集</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>A collection is a folder of documents indexed on this computer. Choose it in a chat (the Collections button beside Attach) and every question searches it; the reply cites what it used. Changed files are indexed again by themselves.</source>
        <translation>文件集是在本機建立索引的一個文件資料夾。在對話中選擇它（「附加」旁的「文件集」按鈕）後，每次提問都會檢索它，回覆會註明所用的出處。檔案更改後會自動重新索引。</translation>
    </message>
    <message>
        <location line="+11"/>
        <source>Collection</source>
        <translation>文件集</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Files</source>
        <translation>檔案</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Chunks</source>
        <translation>片段</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Languages</source>
        <translation>語言</translation>
    </message>
    <message>
        <location line="+1"/>
        <location line="+6"/>
        <source>Status</source>
        <translation>狀態</translation>
    </message>
    <message>
        <location line="-6"/>
        <source>Folders</source>
        <translation>資料夾</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>File</source>
        <translation>檔案</translation>
    </message>
    <message>
        <location line="+10"/>
        <source>Add folder…</source>
        <translation>新增資料夾…</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Rescan</source>
        <translation>重新掃描</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Remove</source>
        <translation>移除</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Close</source>
        <translation>關閉</translation>
    </message>
    <message>
        <location line="+65"/>
        <source>⚠ {0}: its embedding model, {1}, does not cover {2}, so searching those passages by meaning works poorly (keyword search still finds them). Pick a multilingual embedding model that covers them, such as {3}, and index the collection again.</source>
        <translation>⚠ {0}：它的嵌入模型 {1} 不支援{2}，按語義搜尋這些片段效果很差（關鍵詞搜尋仍能找到它們）。請選擇一個支援這些語言的多語言嵌入模型（例如 {3}），然後重新索引這個文件集。</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>⚠ {0}: its embedding model, {1}, does not cover {2}, so searching those passages by meaning works poorly (keyword search still finds them). Pick an embedding model whose languages include them and index the collection again.</source>
        <translation>⚠ {0}：它的嵌入模型 {1} 不支援{2}，按語義搜尋這些片段效果很差（關鍵詞搜尋仍能找到它們）。請選擇一個支援這些語言的嵌入模型，然後重新索引這個文件集。</translation>
    </message>
    <message>
        <location line="+20"/>
        <source>Indexing {0} of {1}: {2}</source>
        <translation>正在索引第 {0} 個，共 {1} 個：{2}</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Indexing…</source>
        <translation>正在索引…</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>{0} skipped</source>
        <translation>跳過 {0} 個</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>{0} missing</source>
        <translation>缺失 {0} 個</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>{0} failed</source>
        <translation>失敗 {0} 個</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Up to date</source>
        <translation>已是最新</translation>
    </message>
    <message>
        <location line="+15"/>
        <source>skipped: {0}</source>
        <translation>已跳過：{0}</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>failed: {0}</source>
        <translation>失敗：{0}</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>missing: {0}</source>
        <translation>缺失：{0}</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>1 chunk</source>
        <translation>1 個片段</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>{0} chunks</source>
        <translation>{0} 個片段</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>Add a folder of documents</source>
        <translation>新增文件資料夾</translation>
    </message>
    <message>
        <location line="+11"/>
        <source>New collection</source>
        <translation>新建文件集</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Name:</source>
        <translation>名稱：</translation>
    </message>
    <message>
        <location line="+13"/>
        <source>Indexing {0}…</source>
        <translation>正在索引 {0}…</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>Remove collection</source>
        <translation>移除文件集</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Forget the collection {0}? The files stay on disk.</source>
        <translation>移除文件集 {0}？檔案仍保留在磁碟上。</translation>
    </message>
</context>
<context>
    <name>Composer</name>
    <message>
        <location filename="../../app/views/chat/composer.py" line="+114"/>
        <source>Message Hearth…  (Enter to send, Shift+Enter for a new line)</source>
        <translation>給 Hearth 發訊息…（Enter 傳送，Shift+Enter 換行）</translation>
    </message>
    <message>
        <location line="+5"/>
        <location line="+160"/>
        <source>Send</source>
        <translation>傳送</translation>
    </message>
    <message>
        <location line="-154"/>
        <source>Think</source>
        <translation>思考</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Let the model think before it answers</source>
        <translation>讓模型先思考再回答</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Thinking on or off</source>
        <translation>開啟或關閉思考</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Attach…</source>
        <translation>附加…</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Attach files (or drop them on the window)</source>
        <translation>附加檔案（或拖放到視窗上）</translation>
    </message>
    <message>
        <location line="+1"/>
        <location line="+68"/>
        <source>Attach files</source>
        <translation>附加檔案</translation>
    </message>
    <message>
        <location line="-64"/>
        <source>Image…</source>
        <translation>圖片…</translation>
    </message>
    <message>
        <location line="+1"/>
        <location line="+72"/>
        <source>Attach images</source>
        <translation>附加圖片</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Images ({0});;All files (*)</source>
        <translation>圖片 ({0});;所有檔案 (*)</translation>
    </message>
    <message>
        <location line="+11"/>
        <source>Pasted image</source>
        <translation>貼上的圖片</translation>
    </message>
    <message>
        <location line="+15"/>
        <source>This model cannot read images: {0}</source>
        <translation>此模型無法讀取圖片：{0}</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Attach images (or drop or paste them into the message)</source>
        <translation>附加圖片（也可以拖放或貼上到訊息中）</translation>
    </message>
    <message>
        <location line="+28"/>
        <source>Not sent</source>
        <translation>未傳送</translation>
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
        <translation>正在讀取圖片…</translation>
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
        <translation>已置頂：{0}</translation>
    </message>
</context>
<context>
    <name>CrashDialog</name>
    <message>
        <location filename="../../app/views/dialogs/crash.py" line="+37"/>
        <source>Hearth closed unexpectedly</source>
        <translation>Hearth 意外關閉</translation>
    </message>
    <message>
        <location line="+15"/>
        <source>Hearth stopped because of an error last time. The report below stays on this computer; you can copy it into a bug report.
{path}</source>
        <translation>Hearth 上次因錯誤而停止。下面的報告只儲存在這臺電腦上；你可以把它複製到錯誤報告中。
{path}</translation>
    </message>
    <message>
        <location line="+19"/>
        <source>Open folder</source>
        <translation>開啟資料夾</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Copy</source>
        <translation>複製</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Dismiss</source>
        <translation>關閉</translation>
    </message>
    <message>
        <location line="+16"/>
        <source>Could not read {path}: {error}</source>
        <translation>無法讀取 {path}：{error}</translation>
    </message>
</context>
<context>
    <name>DownloadDialog</name>
    <message>
        <location filename="../../app/views/models/download_dialog.py" line="+70"/>
        <source>Download model</source>
        <translation>下載模型</translation>
    </message>
    <message>
        <location line="+19"/>
        <source>Ready to download.</source>
        <translation>準備下載。</translation>
    </message>
    <message>
        <location line="+11"/>
        <source>{0} · {1}</source>
        <translation>{0} · {1}</translation>
    </message>
    <message>
        <location line="+10"/>
        <source>with its vision projector {0} ({1}), so the model can see</source>
        <translation>連同其視覺投影器 {0}（{1}），讓模型能識圖</translation>
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
        <translation>繼續</translation>
    </message>
    <message>
        <location line="-33"/>
        <source>Enter Hub token…</source>
        <translation>輸入 Hub 令牌…</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Use this model</source>
        <translation>使用此模型</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Close</source>
        <translation>關閉</translation>
    </message>
    <message>
        <location line="+31"/>
        <source>Download</source>
        <translation>下載</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>{0} of {1}</source>
        <translation>{0} / {1}</translation>
    </message>
    <message>
        <location line="+13"/>
        <source>Downloading…</source>
        <translation>正在下載…</translation>
    </message>
    <message>
        <location line="+47"/>
        <source>Its vision projector, verified too: {0}</source>
        <translation>其視覺投影器也已校驗：{0}</translation>
    </message>
    <message>
        <source>Checking free disk space…</source>
        <translation type="vanished">正在檢查可用磁碟空間…</translation>
    </message>
    <message>
        <location line="-43"/>
        <source>Checking sha256…</source>
        <translation>正在校驗 sha256…</translation>
    </message>
    <message>
        <source>Moving the file into the models folder…</source>
        <translation type="vanished">正在把檔案移入模型資料夾…</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Pausing…</source>
        <translation>正在暫停…</translation>
    </message>
    <message>
        <location line="+20"/>
        <source>Checking free disk space and any part already downloaded…</source>
        <translation>正在檢查可用磁碟空間和已下載的部分…</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>Paused. The part already downloaded is kept; Resume continues it.</source>
        <translation>已暫停。已下載的部分會保留，點「繼續」接著下載。</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>Downloaded and verified (sha256). Saved to {0}</source>
        <translation>已下載並通過校驗（sha256）。儲存在 {0}</translation>
    </message>
</context>
<context>
    <name>EditDialog</name>
    <message>
        <location filename="../../app/views/dialogs/common.py" line="+128"/>
        <source>Edit message</source>
        <translation>編輯訊息</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>Send as new branch</source>
        <translation>作為新分支傳送</translation>
    </message>
</context>
<context>
    <name>EndpointsDialog</name>
    <message>
        <location filename="../../app/views/dialogs/endpoints.py" line="+59"/>
        <source>Remote endpoints</source>
        <translation>遠端端點</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>New</source>
        <translation>新建</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Remove</source>
        <translation>刪除</translation>
    </message>
    <message>
        <location line="+33"/>
        <source>Keep the key for this session only</source>
        <translation>僅在本次會話中保留金鑰</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Forget saved key</source>
        <translation>忘記已儲存的金鑰</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>List models</source>
        <translation>列出模型</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Name</source>
        <translation>名稱</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Base URL</source>
        <translation>基礎 URL</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Server kind</source>
        <translation>伺服器型別</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>API key</source>
        <translation>API 金鑰</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Save</source>
        <translation>儲存</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Test connection</source>
        <translation>測試連線</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Use this endpoint</source>
        <translation>使用此端點</translation>
    </message>
    <message>
        <location line="+17"/>
        <source>Detect automatically</source>
        <translation>自動檢測</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Other OpenAI-compatible server</source>
        <translation>其他 OpenAI 相容伺服器</translation>
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
        <translation>llama.cpp 伺服器</translation>
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
        <translation>無法儲存金鑰：{reason}。你輸入的金鑰只會保留到 Hearth 退出為止。</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Keys are saved in the system keyring, never in Hearth&apos;s files.</source>
        <translation>金鑰儲存在系統金鑰環中，絕不會寫入 Hearth 的檔案。</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>(a key is set — type to replace it)</source>
        <translation>（已設定金鑰——輸入新金鑰即可替換）</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>(none)</source>
        <translation>（無）</translation>
    </message>
    <message>
        <location line="+57"/>
        <source>Saved “{name}”.</source>
        <translation>已儲存「{name}」。</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>The key was removed.</source>
        <translation>金鑰已刪除。</translation>
    </message>
    <message>
        <location line="+19"/>
        <source>Connected, but the server does not list “{model}”.</source>
        <translation>已連線，但伺服器沒有列出「{model}」。</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>Listing models is not available here.</source>
        <translation>此處無法列出模型。</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Connecting to {url}…</source>
        <translation>正在連線 {url}…</translation>
    </message>
    <message numerus="yes">
        <location line="+12"/>
        <source>Connected: the server offers %n model(s).</source>
        <translation>
            <numerusform>已連線：伺服器提供 %n 個模型。</numerusform>
        </translation>
    </message>
    <message>
        <location line="+41"/>
        <source>{problem}. The key is kept for this session only.</source>
        <translation>{problem}。金鑰僅在本次會話中保留。</translation>
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
        <translation>不支援此模型格式或架構。</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>The model file is damaged or incomplete.</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>模型檔案已損壞或不完整。</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>There is not enough memory for this model.</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>記憶體不足，無法載入此模型。</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>The model could not be loaded.</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>無法載入模型。</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>The conversation is too long for this model&apos;s context.</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>對話過長，超出了此模型的上下文長度。</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>A setting is out of range.</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>某項設定超出了允許範圍。</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>The server could not be reached.</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>無法連線到伺服器。</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>The server refused the request.</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>伺服器拒絕了請求。</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>The engine has shut down.</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>推理引擎已關閉。</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>The model reported a problem.</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>模型報告了一個問題。</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Your conversations could not be saved or read.</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>無法儲存或讀取你的對話。</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>A file could not be read or written.</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>無法讀取或寫入檔案。</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Something went wrong.</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>出現了問題。</translation>
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
        <translation>無法匯入此檔案。</translation>
    </message>
</context>
<context>
    <name>FinalSave</name>
    <message>
        <location filename="../../app/chat/final_save.py" line="+52"/>
        <source>Not saved: {0}. This reply is only on screen; copy it before closing Hearth.</source>
        <translation>未儲存：{0}。這條回覆只在螢幕上，請在關閉 Hearth 前複製它。</translation>
    </message>
</context>
<context>
    <name>GuardSection</name>
    <message>
        <location filename="../../app/views/models/guards.py" line="+28"/>
        <source>Safety: guard models for the safety review</source>
        <translation>安全：用於安全審查的守衛模型</translation>
    </message>
    <message>
        <location line="+22"/>
        <source>Downloaded</source>
        <translation>已下載</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Download…</source>
        <translation>下載…</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>file name as the publisher usually names it</source>
        <translation>檔名按釋出者的慣常命名，未經線上核對</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Licence: {0}</source>
        <translation>許可證：{0}</translation>
    </message>
</context>
<context>
    <name>HubTab</name>
    <message>
        <location filename="../../app/views/models/hub_tab.py" line="+47"/>
        <source>Use hf-mirror.com (China)</source>
        <translation>使用 hf-mirror.com（中國大陸）</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Use huggingface.co</source>
        <translation>使用 huggingface.co</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Save address</source>
        <translation>儲存地址</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>Save token</source>
        <translation>儲存令牌</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Forget token</source>
        <translation>刪除令牌</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>Gated models (Llama, Gemma) need a free Hugging Face account: accept the model&apos;s licence on its Hub page, create a read token under Settings → Access Tokens, and paste it here.</source>
        <translation>受限模型（Llama、Gemma）需要一個免費的 Hugging Face 賬號：在模型的 Hub 頁面上接受其許可協議，在 Settings → Access Tokens 中建立一個只讀令牌，然後貼上到這裡。</translation>
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
        <translation>（已設定令牌——輸入新令牌即可替換）</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>(none)</source>
        <translation>（無）</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Tokens are saved in the system keyring, never in Hearth&apos;s files.</source>
        <translation>令牌儲存在系統金鑰環中，絕不寫入 Hearth 的檔案。</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>No keyring ({0}): a token is kept only until Hearth quits.</source>
        <translation>沒有金鑰環（{0}）：令牌只保留到 Hearth 退出為止。</translation>
    </message>
    <message>
        <location line="+19"/>
        <source>The address must start with http:// or https://.</source>
        <translation>地址必須以 http:// 或 https:// 開頭。</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Using {0}.</source>
        <translation>正在使用 {0}。</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>The token was saved.</source>
        <translation>令牌已儲存。</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>The token is kept for this session only.</source>
        <translation>令牌僅在本次執行期間保留。</translation>
    </message>
    <message>
        <location line="+15"/>
        <source>Send the Hub token to this mirror?</source>
        <translation>要把 Hub 令牌傳送到這個映象嗎？</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Your Hub token was made for huggingface.co. {0} is run by others: send it there only if you trust it (gated models there need it).</source>
        <translation>你的 Hub 令牌是為 huggingface.co 設定的。{0} 由他人運營：只有信任它時才傳送（那裡的受限模型需要令牌）。</translation>
    </message>
    <message>
        <location line="+16"/>
        <source>The token goes to {0}.</source>
        <translation>令牌會發送到 {0}。</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>The token is not sent to {0}.</source>
        <translation>令牌不會發送到 {0}。</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>The token was removed.</source>
        <translation>令牌已刪除。</translation>
    </message>
</context>
<context>
    <name>ImageChip</name>
    <message>
        <location filename="../../app/views/chat/image_chip.py" line="+63"/>
        <source>reading…</source>
        <translation>讀取中…</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>The picture is being read and checked</source>
        <translation>正在讀取並檢查這張圖片</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>How many tokens this picture may take: more reads small text better, takes more of the context and longer to encode</source>
        <translation>這張圖片最多可佔用的 token 數：越多越能看清小字，但會佔用更多上下文，編碼也更久</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Image token budget</source>
        <translation>圖片 token 預算</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>Remove this image</source>
        <translation>移除這張圖片</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Remove image {0}</source>
        <translation>移除圖片 {0}</translation>
    </message>
    <message>
        <location line="+52"/>
        <source>up to {0}</source>
        <translation>最多 {0}</translation>
    </message>
    <message>
        <location line="+1"/>
        <source> (default)</source>
        <translation>（預設）</translation>
    </message>
    <message>
        <location line="+29"/>
        <source>≈ {0} tokens</source>
        <translation>≈ {0} 個 token</translation>
    </message>
</context>
<context>
    <name>ImageChips</name>
    <message>
        <location filename="../../app/views/chat/image_chips.py" line="+40"/>
        <source>this model has no vision projector</source>
        <translation>此模型沒有視覺投影器</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>this model has no vision projector — download its mmproj</source>
        <translation>此模型沒有視覺投影器——請下載它的 mmproj 檔案</translation>
    </message>
    <message>
        <location line="+88"/>
        <source>Images cannot be sent to this model: {0}</source>
        <translation>無法向此模型傳送圖片：{0}</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>The message is waiting for the model: add pictures after it is sent.</source>
        <translation>訊息正在等待模型：請在傳送後再新增圖片。</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>Pasted image</source>
        <translation>貼上的圖片</translation>
    </message>
    <message>
        <location line="+42"/>
        <source>{0} cannot be attached: {1}</source>
        <translation>無法附加 {0}：{1}</translation>
    </message>
</context>
<context>
    <name>ImageViewer</name>
    <message>
        <location filename="../../app/views/chat/image_viewer.py" line="+28"/>
        <source>This image can no longer be read: {0}</source>
        <translation>這張圖片已無法讀取：{0}</translation>
    </message>
</context>
<context>
    <name>InputMethodNotice</name>
    <message>
        <location filename="../../app/views/chat/input_method_notice.py" line="+26"/>
        <location line="+12"/>
        <source>Chinese input</source>
        <translation>中文輸入</translation>
    </message>
    <message>
        <location line="-10"/>
        <source>Typing Chinese needs one more package</source>
        <translation>輸入中文還需要安裝一個軟體包</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Your input method (fcitx5) is running, but Hearth&apos;s Qt has no module to reach it, so typing Chinese will not work here. Install it, then restart Hearth:

{0}</source>
        <translation>你的輸入法（fcitx5）正在執行，但 Hearth 使用的 Qt 缺少連線它的模組，因此這裡無法輸入中文。請安裝後重新啟動 Hearth：

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
        <translation>正在查詢模型</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Preparing (once)</source>
        <translation>正在準備（僅一次）</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Opening</source>
        <translation>正在開啟</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Warming up</source>
        <translation>正在預熱</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Ready</source>
        <translation>就緒</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>about {0} min left</source>
        <translation>大約還剩 {0} 分鐘</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>about {0} s left</source>
        <translation>大約還剩 {0} 秒</translation>
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
        <translation>檔案中宣告的許可證：{0}。</translation>
    </message>
    <message>
        <location line="-83"/>
        <source>Model</source>
        <translation>模型</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>From</source>
        <translation>來源</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Architecture</source>
        <translation>架構</translation>
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
        <translation>所需記憶體</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Last used</source>
        <translation>上次使用</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Images</source>
        <translation>影像</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>Use</source>
        <translation>使用</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Delete…</source>
        <translation>刪除…</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Show in folder</source>
        <translation>在資料夾中顯示</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Refresh</source>
        <translation>重新整理</translation>
    </message>
    <message>
        <location line="+26"/>
        <source>Looking for models…</source>
        <translation>正在查詢模型…</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>The models could not be listed: {0}</source>
        <translation>無法列出模型：{0}</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>unreadable</source>
        <translation>無法讀取</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Now</source>
        <translation>正在使用</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>can see</source>
        <translation>可識圖</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Named in the file: {0}</source>
        <translation>檔案內名稱：{0}</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Reads images with its vision projector: {0}</source>
        <translation>用其視覺投影器讀取影像：{0}</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>This file cannot be used: {0}</source>
        <translation>無法使用此檔案：{0}</translation>
    </message>
    <message numerus="yes">
        <location line="+7"/>
        <source>%n model(s) on this computer.</source>
        <translation>
            <numerusform>這臺電腦上有 %n 個模型。</numerusform>
        </translation>
    </message>
    <message>
        <location line="+4"/>
        <source>No models yet: download one from the Catalogue tab. They go to {0}</source>
        <translation>還沒有模型：請從「目錄」標籤頁下載。模型會儲存到 {0}</translation>
    </message>
    <message>
        <location line="+26"/>
        <source>Only models in Hearth&apos;s own folder can be deleted here.</source>
        <translation>這裡只能刪除 Hearth 自己資料夾中的模型。</translation>
    </message>
    <message>
        <location line="+20"/>
        <source>Delete model</source>
        <translation>刪除模型</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Delete {0} ({1}) from this computer?</source>
        <translation>要從這臺電腦上刪除 {0}（{1}）嗎？</translation>
    </message>
    <message>
        <location line="+16"/>
        <source>Not deleted: {0}</source>
        <translation>未刪除：{0}</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Deleted {0} and its vision projector {1}.</source>
        <translation>已刪除 {0} 及其視覺投影器 {1}。</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Deleted {0}.</source>
        <translation>已刪除 {0}。</translation>
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
        <translation>主工具欄</translation>
    </message>
    <message>
        <location filename="../../app/views/chat/model_menu.py" line="+40"/>
        <source>Model: loading…</source>
        <translation>模型：正在載入…</translation>
    </message>
    <message>
        <location filename="../../app/views/main_window.py" line="+12"/>
        <source>Models…</source>
        <translation>模型…</translation>
    </message>
    <message>
        <location line="+10"/>
        <source>Sampling</source>
        <translation>取樣</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Dark / light</source>
        <translation>深色 / 淺色</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>&amp;File</source>
        <translation>檔案(&amp;F)</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>New chat</source>
        <translation>新對話</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Import chats…</source>
        <translation>匯入對話…</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Export this chat as Markdown…</source>
        <translation>將此對話匯出為 Markdown…</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Export this chat as JSON…</source>
        <translation>將此對話匯出為 JSON…</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Export all chats as Markdown…</source>
        <translation>將所有對話匯出為 Markdown…</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Export all chats as JSON…</source>
        <translation>將所有對話匯出為 JSON…</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Quit</source>
        <translation>退出</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>&amp;Edit</source>
        <translation>編輯(&amp;E)</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>&amp;View</source>
        <translation>檢視(&amp;V)</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Search chats</source>
        <translation>搜尋對話</translation>
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
        <translation>MCP 伺服器和工具…</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Open a chat to export it.</source>
        <translation>請先開啟要匯出的對話。</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Export into folder</source>
        <translation>匯出到資料夾</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Import chats</source>
        <translation>匯入對話</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Chats (*.json *.md);;All files (*)</source>
        <translation>對話 (*.json *.md);;所有檔案 (*)</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>Undo delete</source>
        <translation>撤銷刪除</translation>
    </message>
    <message>
        <location filename="../../app/views/chat/model_menu.py" line="+28"/>
        <source>Find and download models…</source>
        <translation>查詢和下載模型…</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Bundled model (SmolLM2 135M)</source>
        <translation>內建模型（SmolLM2 135M）</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Open Hugging Face folder…</source>
        <translation>開啟 Hugging Face 資料夾…</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Open GGUF file…</source>
        <translation>開啟 GGUF 檔案…</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Remote endpoints…</source>
        <translation>遠端端點…</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Recent</source>
        <translation>最近使用</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>Serve the local engine on http://127.0.0.1:{0}/v1</source>
        <translation>在 http://127.0.0.1:{0}/v1 上提供本地引擎服務</translation>
    </message>
    <message>
        <location filename="../../app/views/main_window.py" line="+74"/>
        <source>API: {0}</source>
        <translation>API：{0}</translation>
    </message>
    <message>
        <location filename="../../app/views/chat/model_menu.py" line="+13"/>
        <source>Open a model folder</source>
        <translation>開啟模型資料夾</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>Open a GGUF model</source>
        <translation>開啟 GGUF 模型</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>GGUF models (*.gguf)</source>
        <translation>GGUF 模型 (*.gguf)</translation>
    </message>
    <message>
        <location filename="../../app/views/chat/status_bar.py" line="+74"/>
        <source>Ready</source>
        <translation>就緒</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>No model</source>
        <translation>未載入模型</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Loading model…</source>
        <translation>正在載入模型…</translation>
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
        <translation>模型：無——請選擇一個</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Model: {0}</source>
        <translation>模型：{0}</translation>
    </message>
    <message>
        <location filename="../../app/views/chat/status_bar.py" line="+20"/>
        <source>{0} on {1} ({2}); weights: {3}</source>
        <translation>{0}，運行於 {1}（{2}）；權重：{3}</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>ONNX Runtime kernels</source>
        <translation>ONNX Runtime 核心</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Kernels: {0}</source>
        <translation>核心：{0}</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>can see</source>
        <translation>可識圖</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Reads images</source>
        <translation>可讀取影像</translation>
    </message>
    <message>
        <location line="+2"/>
        <source> (≈ {0} tokens a typical image)</source>
        <translation>（一張典型影像約 {0} 個 token）</translation>
    </message>
    <message>
        <location line="+24"/>
        <source>Model unloaded after {0} min idle</source>
        <translation>模型閒置 {0} 分鐘後已解除安裝</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Your next message reloads it.</source>
        <translation>傳送下一條訊息時會重新載入。</translation>
    </message>
    <message>
        <location line="+16"/>
        <source>Context {0} / {1} tokens ({2} restored)</source>
        <translation>上下文 {0} / {1} 個詞元（已恢復 {2} 個）</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Context {0} / {1} tokens ({2} cached)</source>
        <translation>上下文 {0} / {1} token（已快取 {2}）</translation>
    </message>
    <message>
        <location line="+4"/>
        <source> + ≈ {0} for images</source>
        <translation> + 圖片約 {0}</translation>
    </message>
    <message>
        <source>Message copied.</source>
        <translation type="vanished">訊息已複製。</translation>
    </message>
    <message>
        <source>Message details</source>
        <translation type="vanished">訊息詳情</translation>
    </message>
    <message>
        <source>Copy</source>
        <translation type="vanished">複製</translation>
    </message>
    <message>
        <source>Select text…</source>
        <translation type="vanished">選擇文本…</translation>
    </message>
    <message>
        <source>Copy code block {0}</source>
        <translation type="vanished">複製程式碼塊 {0}</translation>
    </message>
    <message>
        <source>Edit…</source>
        <translation type="vanished">編輯…</translation>
    </message>
    <message>
        <source>Regenerate</source>
        <translation type="vanished">重新生成</translation>
    </message>
    <message>
        <source>Details</source>
        <translation type="vanished">詳情</translation>
    </message>
    <message>
        <source>Message</source>
        <translation type="vanished">訊息</translation>
    </message>
    <message>
        <source>Code copied.</source>
        <translation type="vanished">程式碼已複製。</translation>
    </message>
    <message>
        <location filename="../../app/views/main_window.py" line="+76"/>
        <source>Chat moved to the trash.</source>
        <translation>對話已移至回收站。</translation>
    </message>
    <message>
        <source>Precise</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation type="vanished">精確</translation>
    </message>
    <message>
        <source>Balanced</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation type="vanished">均衡</translation>
    </message>
    <message>
        <source>Creative</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation type="vanished">創意</translation>
    </message>
    <message>
        <source>Exported {0} chat(s) to {1}</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation type="vanished">已將 {0} 個對話匯出到 {1}</translation>
    </message>
    <message>
        <source>Imported {0} chat(s).</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation type="vanished">已匯入 {0} 個對話。</translation>
    </message>
</context>
<context>
    <name>MessageActions</name>
    <message>
        <location filename="../../app/views/chat/message_actions.py" line="+41"/>
        <source>Message copied.</source>
        <translation>訊息已複製。</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>Message details</source>
        <translation>訊息詳情</translation>
    </message>
    <message>
        <location line="+22"/>
        <source>Copy</source>
        <translation>複製</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Select text…</source>
        <translation>選擇文本…</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Copy code block {0}</source>
        <translation>複製程式碼塊 {0}</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Edit…</source>
        <translation>編輯…</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Regenerate</source>
        <translation>重新生成</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Details</source>
        <translation>詳情</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Message</source>
        <translation>訊息</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>Code copied.</source>
        <translation>程式碼已複製。</translation>
    </message>
</context>
<context>
    <name>MessageDelegate</name>
    <message>
        <location filename="../../app/views/chat/message_delegate.py" line="+175"/>
        <source>Copy</source>
        <translation>複製</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Edit</source>
        <translation>編輯</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Regenerate</source>
        <translation>重新生成</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Continue</source>
        <translation>繼續生成</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Details</source>
        <translation>詳情</translation>
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
        <translation>系統</translation>
    </message>
</context>
<context>
    <name>MessageText</name>
    <message>
        <location filename="../../app/views/chat/message_text.py" line="+82"/>
        <source>Copy</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>複製</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>image</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>圖片</translation>
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
        <translation>失敗：{0}</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>{0:.2f} s to first token</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>首個 token 用時 {0:.2f} 秒</translation>
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
        <translation>{0} 個 token</translation>
    </message>
    <message>
        <location line="-88"/>
        <source>Prompt tokens</source>
        <translation>提示 token 數</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Cached prompt tokens</source>
        <translation>快取命中的提示 token 數</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Reply tokens</source>
        <translation>回覆 token 數</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Time to first token</source>
        <translation>首個 token 用時</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Prompt speed</source>
        <translation>提示處理速度</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Reply speed</source>
        <translation>回覆生成速度</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Total time</source>
        <translation>總用時</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Context window</source>
        <translation>上下文視窗</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Messages left out</source>
        <translation>省略的訊息數</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>finished</source>
        <translation>已完成</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>token limit reached</source>
        <translation>已達 token 上限</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>stopped by you</source>
        <translation>已由你停止</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>failed</source>
        <translation>失敗</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>stopped by the safety review</source>
        <translation>已被安全審查停止</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>(no reply: {0})</source>
        <translation>（無回覆：{0}）</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>({0}; the rest was not shown)</source>
        <translation>（{0}；其餘內容未顯示）</translation>
    </message>
    <message>
        <location line="+15"/>
        <source>… (line shortened; copy shows all)</source>
        <translation>…（此行已截短；複製可得全文）</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>… (message shortened for display; copy shows all)</source>
        <translation>…（訊息過長，僅顯示部分；複製可得全文）</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>… ({0} more rows; copy shows all)</source>
        <translation>…（另有 {0} 行未顯示；複製可得全文）</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>… ({0} more lines; copy shows all)</source>
        <translation>…（另有 {0} 行程式碼未顯示；複製可得全文）</translation>
    </message>
    <message>
        <location line="+31"/>
        <source>stopped at the token limit</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>已達到 token 上限而停止</translation>
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
        <translation>Hearth 關閉時被中斷</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>settings changed while writing</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>生成過程中更改了設定</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>question stopped by the safety review: {0}</source>
        <translation>提問已被安全審查停止：{0}</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>stopped by the safety review: {0}</source>
        <translation>已被安全審查停止：{0}</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>not reviewed: the guard was unavailable</source>
        <translation>未審查：安全模型不可用</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>(not recorded)</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>（未記錄）</translation>
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
        <translation>設定：{0}</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>From token {0}: {1}</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>從第 {0} 個 token 起：{1}</translation>
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
        <translation>結束原因：{0}</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Error: {0}</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation>錯誤：{0}</translation>
    </message>
    <message>
        <source>temperature</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation type="vanished">溫度</translation>
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
        <translation type="vanished">重複懲罰</translation>
    </message>
    <message>
        <source>max tokens</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation type="vanished">最大 token 數</translation>
    </message>
    <message>
        <source>seed</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation type="vanished">隨機種子</translation>
    </message>
    <message>
        <source>stop</source>
        <translatorcomment>Not extracted by lupdate: translated at run time through a helper with a non-literal argument (see README).</translatorcomment>
        <translation type="vanished">停止字串</translation>
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
        <translation>正在估算剩餘時間…</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>{0} s left</source>
        <translation>還剩 {0} 秒</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>about {0} min left</source>
        <translation>大約還剩 {0} 分鐘</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>about {0} h {1} min left</source>
        <translation>大約還剩 {0} 小時 {1} 分鐘</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>Fits</source>
        <translation>放得下</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Tight</source>
        <translation>勉強</translation>
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
        <translation>≈ {0} 詞元/秒</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>Yes</source>
        <translation>是</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>No (slower path)</source>
        <translation>否（較慢路徑）</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Never</source>
        <translation>從未</translation>
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
        <translation>檔案</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Loaded now</source>
        <translation>當前已載入</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>This model is gated: accept its licence on the Hub, then enter your Hugging Face token in the Hub tab.</source>
        <translation>此模型受限：請先在 Hub 上接受其許可協議，然後在「Hub」標籤頁中輸入你的 Hugging Face 令牌。</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>The Hub cannot be reached. Check your connection, or set a mirror (for example https://hf-mirror.com) in the Hub tab.</source>
        <translation>無法連線 Hub。請檢查網路，或在「Hub」標籤頁中設定映象（例如 https://hf-mirror.com）。</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>No such model repository on the Hub (or it is private: a token is needed).</source>
        <translation>Hub 上沒有這個模型倉庫（或者它是私有的，需要令牌）。</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>The Hub has no such file (404).</source>
        <translation>Hub 上沒有這個檔案（404）。</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>There is not enough free disk space for this download.</source>
        <translation>磁碟剩餘空間不足，無法完成此下載。</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>The downloaded file failed its sha256 check and was deleted. Try again.</source>
        <translation>下載的檔案未通過 sha256 校驗，已被刪除。請重試。</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>This file is not a GGUF model.</source>
        <translation>這個檔案不是 GGUF 模型。</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>The download was paused.</source>
        <translation>下載已暫停。</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>The Hub refused the request.</source>
        <translation>Hub 拒絕了請求。</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>A file could not be read or written.</source>
        <translation>無法讀取或寫入檔案。</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Something went wrong: {0}</source>
        <translation>出錯了：{0}</translation>
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
        <translation>目錄</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Search the Hub</source>
        <translation>搜尋 Hub</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>On this computer</source>
        <translation>這臺電腦上</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Hub</source>
        <translation>Hub</translation>
    </message>
    <message>
        <location line="+65"/>
        <source>Unfinished download: {0} ({1} of {2})</source>
        <translation>未完成的下載：{0}（{1} / {2}）</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Resume</source>
        <translation>繼續</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Discard</source>
        <translation>丟棄</translation>
    </message>
</context>
<context>
    <name>Organiser</name>
    <message>
        <location filename="../../app/views/chat/organise.py" line="+38"/>
        <source>Show folder</source>
        <translation>顯示資料夾</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>All chats</source>
        <translation>全部對話</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Trash</source>
        <translation>回收站</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Temporary</source>
        <translation>臨時</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>A new chat that is never saved to disk</source>
        <translation>新建一個從不儲存到磁碟的對話</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Temporary chat — not saved</source>
        <translation>臨時對話——不會儲存</translation>
    </message>
    <message>
        <location line="+44"/>
        <source>Move to folder</source>
        <translation>移到資料夾</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Folder (leave empty for none):</source>
        <translation>資料夾（留空表示不放入資料夾）：</translation>
    </message>
    <message>
        <location line="+51"/>
        <source>Hearth — temporary chat</source>
        <translation>Hearth — 臨時對話</translation>
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
        <translation>偏好設定</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>System size</source>
        <translation>系統大小</translation>
    </message>
    <message>
        <location line="+0"/>
        <source> pt</source>
        <translation> 磅</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Model&apos;s own</source>
        <translation>模型自帶</translation>
    </message>
    <message>
        <location line="+1"/>
        <source> tokens</source>
        <translation> 個 token</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Automatic</source>
        <translation>自動</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Never</source>
        <translation>從不</translation>
    </message>
    <message>
        <location line="+1"/>
        <source> min</source>
        <translation> 分鐘</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Off</source>
        <translation>關閉</translation>
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
        <translation>上下文長度</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>CPU threads</source>
        <translation>CPU 執行緒數</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Unload the model after idle</source>
        <translation>閒置後解除安裝模型</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Saved chat caches (resume at once)</source>
        <translation>儲存的對話快取（立即續接）</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>Context length, threads and saved caches apply when a local model is loaded.</source>
        <translation>上下文長度、執行緒數和儲存的快取在載入本地模型時生效。</translation>
    </message>
    <message>
        <source>Context length and threads apply when a local model is loaded.</source>
        <translation type="vanished">上下文長度和執行緒數在載入本地模型時生效。</translation>
    </message>
</context>
<context>
    <name>Presets</name>
    <message>
        <location filename="../../app/system/settings.py" line="+348"/>
        <source>Precise</source>
        <translation>精確</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Balanced</source>
        <translation>均衡</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Creative</source>
        <translation>創意</translation>
    </message>
</context>
<context>
    <name>PromptLibraryBar</name>
    <message>
        <location filename="../../app/views/dialogs/prompt_library.py" line="+69"/>
        <source>Saved system prompts</source>
        <translation>已儲存的系統提示詞</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Saved system prompts: pick one for this chat</source>
        <translation>已儲存的系統提示詞：為這個對話選擇一個</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Manage saved prompts</source>
        <translation>管理已儲存的提示詞</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Save as a new prompt…</source>
        <translation>另存為新提示詞…</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Rename…</source>
        <translation>重新命名…</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Delete</source>
        <translation>刪除</translation>
    </message>
    <message>
        <location line="+18"/>
        <source>Custom</source>
        <translation>自定義</translation>
    </message>
    <message>
        <location line="+30"/>
        <source>Save system prompt</source>
        <translation>儲存系統提示詞</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Name:</source>
        <translation>名稱：</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>Rename saved prompt</source>
        <translation>重新命名已儲存的提示詞</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>New name:</source>
        <translation>新名稱：</translation>
    </message>
</context>
<context>
    <name>QueuedSendBar</name>
    <message>
        <location filename="../../app/views/chat/queued_send.py" line="+30"/>
        <source>Retry</source>
        <translation>重試</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Cancel sending</source>
        <translation>取消傳送</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Keep the text in the box without sending it</source>
        <translation>把文字留在輸入框中，不傳送</translation>
    </message>
    <message>
        <location line="+16"/>
        <source>The model could not be opened: {0}. Your edit is kept: retry, or choose another model.</source>
        <translation>無法開啟模型：{0}。您的修改已保留：請重試，或選擇其他模型。</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>The model could not be opened: {0}. Your message is kept: retry, or choose another model.</source>
        <translation>無法開啟模型：{0}。您的訊息已保留：請重試，或選擇其他模型。</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Waiting for the model to open… your edit will be sent when ready.</source>
        <translation>正在等待模型開啟… 就緒後將傳送您的修改。</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Waiting for the model to open… it will be sent when ready.</source>
        <translation>正在等待模型開啟… 就緒後將自動傳送。</translation>
    </message>
</context>
<context>
    <name>ReplyRun</name>
    <message>
        <location filename="../../app/chat/reply_run.py" line="+86"/>
        <source>{0} oldest messages did not fit the context and were left out.</source>
        <translation>最早的 {0} 條訊息超出了上下文長度，已被省略。</translation>
    </message>
    <message>
        <location line="+20"/>
        <source>Stopped: the reply kept repeating “{0}”. A larger model answers better.</source>
        <translation>已停止：回覆一直在重複「{0}」。更大的模型回答得更好。</translation>
    </message>
</context>
<context>
    <name>SafetyBox</name>
    <message>
        <location filename="../../app/views/dialogs/safety_options.py" line="+49"/>
        <source>Safety review</source>
        <translation>安全審查</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Review chats (each chat can choose for itself)</source>
        <translation>審查對話（每個對話可自行選擇）</translation>
    </message>
    <message>
        <location line="+11"/>
        <source>Qwen3Guard-Gen .gguf file, or served name</source>
        <translation>Qwen3Guard-Gen .gguf 檔案或服務中的模型名</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>optional: http://127.0.0.1:8000/v1</source>
        <translation>可選：http://127.0.0.1:8000/v1</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>one word or phrase a line; re: for a pattern</source>
        <translation>每行一個詞或短語；以 re: 開頭表示正規表示式</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Add a safety system prompt</source>
        <translation>新增安全系統提示</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Strict: stop controversial content too</source>
        <translation>嚴格：有爭議的內容也停止</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Required: stop when the guard is unavailable</source>
        <translation>必需：安全模型不可用時停止</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>Guard model</source>
        <translation>安全模型</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Guard endpoint</source>
        <translation>安全模型端點</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Blocklist</source>
        <translation>遮蔽詞列表</translation>
    </message>
</context>
<context>
    <name>SafetyChoiceBox</name>
    <message>
        <location line="+39"/>
        <source>Safety review</source>
        <translation>安全審查</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Follow Preferences</source>
        <translation>跟隨偏好設定</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>On for this chat</source>
        <translation>此對話開啟</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Off</source>
        <translation>關閉</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Safety review for this chat</source>
        <translation>此對話的安全審查</translation>
    </message>
</context>
<context>
    <name>SamplingPanel</name>
    <message>
        <location filename="../../app/views/chat/sampling_panel.py" line="+105"/>
        <source>Save as…</source>
        <translation>另存為…</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>random</source>
        <translation>隨機</translation>
    </message>
    <message>
        <source>comma-separated, \n for a newline</source>
        <translation type="vanished">以逗號分隔，\n 表示換行</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>e.g. &lt;/s&gt;, \n\n</source>
        <translation>例如 &lt;/s&gt;, \n\n</translation>
    </message>
    <message>
        <location line="+87"/>
        <source>Comma-separated; write \n for a newline, \\ for \.</source>
        <translation>以逗號分隔；用 \n 表示換行，用 \\ 表示 \。</translation>
    </message>
    <message>
        <location line="-83"/>
        <source>You are a helpful assistant.</source>
        <translation>你是一個樂於助人的助手。</translation>
    </message>
    <message>
        <source>Temperature</source>
        <translation type="vanished">溫度</translation>
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
        <translation type="vanished">重複懲罰</translation>
    </message>
    <message>
        <location line="+12"/>
        <source>Preset</source>
        <translation>預設</translation>
    </message>
    <message>
        <source>Max tokens</source>
        <translation type="vanished">最大 token 數</translation>
    </message>
    <message>
        <source>Seed</source>
        <translation type="vanished">隨機種子</translation>
    </message>
    <message>
        <source>Stop strings</source>
        <translation type="vanished">停止字串</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>Sampling</source>
        <translation>取樣</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Changes apply from the next token, even while a reply is written.</source>
        <translation>更改從下一個 token 起生效，即使回覆正在生成。</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>System prompt</source>
        <translation>系統提示詞</translation>
    </message>
    <message>
        <location line="+47"/>
        <source>The current model&apos;s endpoint ignores {0}.</source>
        <translation>當前模型的端點會忽略 {0}。</translation>
    </message>
    <message>
        <location line="+29"/>
        <source>Custom</source>
        <translation>自定義</translation>
    </message>
    <message>
        <location line="+52"/>
        <source>Save preset</source>
        <translation>儲存預設</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Preset name:</source>
        <translation>預設名稱：</translation>
    </message>
</context>
<context>
    <name>SamplingParams</name>
    <message>
        <location filename="../../app/views/chat/param_labels.py" line="+17"/>
        <source>Temperature</source>
        <translation>溫度</translation>
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
        <translation>重複懲罰</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Presence penalty</source>
        <translation>存在懲罰</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Frequency penalty</source>
        <translation>頻率懲罰</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Seed</source>
        <translation>隨機種子</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Max tokens</source>
        <translation>最大 token 數</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Stop strings</source>
        <translation>停止字串</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Beams</source>
        <translation>束數</translation>
    </message>
</context>
<context>
    <name>SearchTab</name>
    <message>
        <location filename="../../app/views/models/search.py" line="+258"/>
        <source>Licence stated in the file: {0}.</source>
        <translation>檔案中宣告的許可證：{0}。</translation>
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
        <translation>搜尋</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>Repository / file</source>
        <translation>倉庫 / 檔案</translation>
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
        <translation>結論</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>RAM needed of available</source>
        <translation>所需記憶體 / 可用記憶體</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Fast path</source>
        <translation>快速路徑</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Speed</source>
        <translation>速度</translation>
    </message>
    <message>
        <location line="+10"/>
        <source>Download…</source>
        <translation>下載…</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Download with its projector…</source>
        <translation>連同投影器下載…</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>The model and its vision projector (mmproj), so it can read images</source>
        <translation>模型及其視覺投影器（mmproj），使其能讀取影像</translation>
    </message>
    <message>
        <location line="+37"/>
        <source>Type a model name to search for.</source>
        <translation>請輸入要搜尋的模型名稱。</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Searching the Hub…</source>
        <translation>正在搜尋 Hub…</translation>
    </message>
    <message numerus="yes">
        <location line="+14"/>
        <source>%n download(s)</source>
        <translation>
            <numerusform>%n 次下載</numerusform>
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
            <numerusform>找到 %n 個倉庫。展開一個即可檢視其檔案。</numerusform>
        </translation>
    </message>
    <message>
        <location line="+15"/>
        <source>Listing the files of {0}…</source>
        <translation>正在列出 {0} 的檔案…</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>split into {0} parts</source>
        <translation>分成 {0} 個檔案</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>{0} has no GGUF files.</source>
        <translation>{0} 中沒有 GGUF 檔案。</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Select a file to read its header and check it precisely.</source>
        <translation>選擇一個檔案，讀取其檔案頭以進行精確檢查。</translation>
    </message>
    <message>
        <location line="+11"/>
        <source>Vision projectors (mmproj)</source>
        <translation>視覺投影器（mmproj）</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>let this repo&apos;s models read images</source>
        <translation>讓此倉庫的模型讀取影像</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>vision projector</source>
        <translation>視覺投影器</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>{0} is a vision projector: it lets a model of this repo read images. Download it with a model, or alone for a model you already have.</source>
        <translation>{0} 是視覺投影器：它讓此倉庫的模型能讀取影像。可與模型一同下載，或為已有的模型單獨下載。</translation>
    </message>
    <message>
        <location line="+10"/>
        <source>Reading the header of {0}…</source>
        <translation>正在讀取 {0} 的檔案頭…</translation>
    </message>
    <message>
        <location line="+8"/>
        <source>{0}: {1}, {2} parameters, context {3} tokens. {4}</source>
        <translation>{0}：{1}，{2} 引數，上下文 {3} 個詞元。{4}</translation>
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
        <translation>鍵盤快捷鍵</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Keys</source>
        <translation>按鍵</translation>
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
        <translation>新對話</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Search chats</source>
        <translation>搜尋對話</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Send the message</source>
        <translation>傳送訊息</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>New line in the message</source>
        <translation>在訊息中換行</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Stop the reply (in the message box)</source>
        <translation>停止回覆（在訊息輸入框中）</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Rename the chosen chat (in the chat list)</source>
        <translation>重新命名選中的對話（在對話列表中）</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Move the chosen chat to the trash (in the chat list)</source>
        <translation>把選中的對話移到回收站（在對話列表中）</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Models</source>
        <translation>模型</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Show or hide the settings panel</source>
        <translation>顯示或隱藏設定面板</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Dark / light</source>
        <translation>深色 / 淺色</translation>
    </message>
    <message>
        <location line="+11"/>
        <source>Stop the reply</source>
        <translation>停止回覆</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Regenerate the last reply</source>
        <translation>重新生成最後一條回覆</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Copy the last reply</source>
        <translation>複製最後一條回覆</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Focus the message box</source>
        <translation>聚焦訊息輸入框</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Previous alternative of the last reply</source>
        <translation>最後一條回覆的上一個版本</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Next alternative of the last reply</source>
        <translation>最後一條回覆的下一個版本</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>New temporary chat</source>
        <translation>新建臨時對話</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Larger text</source>
        <translation>放大文字</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Smaller text</source>
        <translation>縮小文字</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Default text size</source>
        <translation>預設文字大小</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Preferences…</source>
        <translation>偏好設定…</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Keyboard shortcuts</source>
        <translation>鍵盤快捷鍵</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>&amp;Help</source>
        <translation>幫助(&amp;H)</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>Preferences</source>
        <translation>偏好設定</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Preferences ({0})</source>
        <translation>偏好設定（{0}）</translation>
    </message>
    <message>
        <location line="+37"/>
        <source>Last reply copied.</source>
        <translation>已複製最後一條回覆。</translation>
    </message>
</context>
<context>
    <name>Sidebar</name>
    <message>
        <location filename="../../app/views/chat/sidebar.py" line="+38"/>
        <source>+  New chat</source>
        <translation>+  新對話</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Search all chats…</source>
        <translation>搜尋所有對話…</translation>
    </message>
    <message>
        <location line="+32"/>
        <source>Delete</source>
        <translation>刪除</translation>
    </message>
    <message>
        <location line="+33"/>
        <source>Unpin</source>
        <translation>取消置頂</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>Pin</source>
        <translation>置頂</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Rename</source>
        <translation>重新命名</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Move to folder…</source>
        <translation>移到資料夾…</translation>
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
        <translation>⚠ 較慢路徑</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>⚠ Running on the slower float32 path</source>
        <translation>⚠ 正在較慢的 float32 路徑上執行</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>Why, and what to do…</source>
        <translation>原因及解決辦法…</translation>
    </message>
    <message>
        <location line="+16"/>
        <source>“{name}” runs on the slower float32 path: {reason}</source>
        <translation>「{name}」正在較慢的 float32 路徑上執行：{reason}</translation>
    </message>
    <message>
        <location line="+15"/>
        <source>Slower path</source>
        <translation>較慢路徑</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>“{name}” runs on the slower float32 path.</source>
        <translation>「{name}」正在較慢的 float32 路徑上執行。</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>Why: {reason}</source>
        <translation>原因：{reason}</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>What you can do: use a GGUF file in Q4_K_M, Q5_K_M, Q6_K or Q8_0 of a supported architecture (Llama, for example). Replies work as they are, only more slowly and with more memory.</source>
        <translation>解決辦法：使用受支援架構（例如 Llama）的 Q4_K_M、Q5_K_M、Q6_K 或 Q8_0 格式的 GGUF 檔案。回覆仍可正常生成，只是更慢，佔用的記憶體也更多。</translation>
    </message>
</context>
<context>
    <name>SourceDialog</name>
    <message>
        <location filename="../../app/views/documents/sources_fold.py" line="+141"/>
        <source>Open file</source>
        <translation>開啟檔案</translation>
    </message>
    <message>
        <location line="+19"/>
        <source>From the collection {0}: {1}</source>
        <translation>來自文件集 {0}：{1}</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>{0} has been deleted or moved since it was indexed; this is the passage as it was read then.</source>
        <translation>{0} 在索引後已被刪除或移動；這是當時讀取的段落。</translation>
    </message>
</context>
<context>
    <name>Sources</name>
    <message>
        <location line="-126"/>
        <source>Sources ({0})</source>
        <translation>來源（{0}）</translation>
    </message>
    <message>
        <location line="+52"/>
        <source>{0} tokens</source>
        <translation>{0} 個詞元</translation>
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
        <translation>Hearth 無法開啟你的對話</translation>
    </message>
    <message>
        <location line="+17"/>
        <source>Your conversations were saved by a newer version of Hearth. Update Hearth to open them.</source>
        <translation>你的對話由更新版本的 Hearth 儲存。請更新 Hearth 後再開啟。</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>The conversation database is damaged or is not a Hearth database, or its folder cannot be written (permissions, a full disk).</source>
        <translation>對話資料庫已損壞或不是 Hearth 資料庫，或者其所在資料夾無法寫入（許可權不足或磁碟已滿）。</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>You can move the file aside and start with no conversations: it is renamed, never deleted, so it can still be recovered. Or fix the folder and try again.</source>
        <translation>你可以把該檔案移到一旁，從空白的對話記錄開始：檔案只會被重新命名，絕不會被刪除，之後仍可恢復。也可以修復資料夾後重試。</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Move aside and start fresh</source>
        <translation>移到一旁並重新開始</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Try again</source>
        <translation>重試</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Quit</source>
        <translation>退出</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Open folder</source>
        <translation>開啟資料夾</translation>
    </message>
    <message>
        <location line="+21"/>
        <source>The file could not be moved aside: {0}</source>
        <translation>無法將檔案移到一旁：{0}</translation>
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
        <translation>思考過程</translation>
    </message>
</context>
<context>
    <name>ToolsFold</name>
    <message>
        <location filename="../../app/views/tools/tools_fold.py" line="+21"/>
        <source>ran</source>
        <translation>已執行</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>failed</source>
        <translation>失敗</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>denied by you</source>
        <translation>已被你拒絕</translation>
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
        <translation>儲存伺服器</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>List tools</source>
        <translation>列出工具</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Server / tool</source>
        <translation>伺服器 / 工具</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>All chats</source>
        <translation>所有對話</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>This chat</source>
        <translation>此對話</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Servers (the mcpServers JSON other MCP clients use):</source>
        <translation>伺服器（與其他 MCP 客戶端相同的 mcpServers JSON）：</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>A tool can do whatever its server can: read or change files, run commands, reach the network. Hearth asks before every call.</source>
        <translation>工具能做其伺服器能做的任何事：讀取或修改檔案、執行命令、訪問網路。Hearth 在每次呼叫前都會詢問。</translation>
    </message>
    <message>
        <location line="+24"/>
        <source>Saved.</source>
        <translation>已儲存。</translation>
    </message>
    <message>
        <location line="+24"/>
        <source>running</source>
        <translation>執行中</translation>
    </message>
    <message>
        <location line="+0"/>
        <source>not started</source>
        <translation>未啟動</translation>
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
        <translation>回收站中的對話</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>The trash is empty.</source>
        <translation>回收站是空的。</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>Restore</source>
        <translation>恢復</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Delete forever</source>
        <translation>永久刪除</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Empty trash</source>
        <translation>清空回收站</translation>
    </message>
    <message>
        <location line="+17"/>
        <source>Untitled</source>
        <translation>無標題</translation>
    </message>
    <message>
        <location line="+2"/>
        <source>{0}  (deleted {1})</source>
        <translation>{0}（刪除於 {1}）</translation>
    </message>
    <message>
        <location line="+33"/>
        <source>Erase for good?</source>
        <translation>徹底刪除？</translation>
    </message>
    <message>
        <location line="+16"/>
        <source>Erase {0} chat(s)? This cannot be undone.</source>
        <translation>要徹底刪除 {0} 個對話嗎？此操作無法撤銷。</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Erase every chat in the trash? This cannot be undone.</source>
        <translation>要徹底刪除回收站中的所有對話嗎？此操作無法撤銷。</translation>
    </message>
</context>
<context>
    <name>WhySlow</name>
    <message>
        <location filename="../../app/chat/slowness.py" line="+75"/>
        <source>Close programs you do not need, or choose a smaller model or quantisation.</source>
        <translation>關閉不需要的程式，或選用更小的模型或量化版本。</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>The computer is swapping: {0} MB went to and from the disk since the last look.</source>
        <translation>電腦正在使用交換空間：自上次檢視以來，有 {0} MB 在記憶體和磁碟之間換入換出。</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>Memory is nearly full: Hearth uses {0} GB and only {1} GB is left.</source>
        <translation>記憶體快滿了：Hearth 佔用 {0} GB，只剩 {1} GB 可用。</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>Another program is using the processor: Hearth measured it runs best on {0} of {1} cores now.</source>
        <translation>另一個程式正在佔用處理器：Hearth 測得目前用 {1} 個核心中的 {0} 個執行最快。</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Pause or close the busy program (a build, a video, another model); Hearth takes the core back by itself.</source>
        <translation>暫停或關閉佔用處理器的程式（編譯、影片、另一個模型）；Hearth 會自動重新用上這個核心。</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>The model runs on the slower float32 path: {0}</source>
        <translation>模型正在較慢的 float32 路徑上執行：{0}</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Use a GGUF file in Q4_K_M, Q5_K_M, Q6_K or Q8_0 of a supported architecture.</source>
        <translation>請使用受支援架構的 Q4_K_M、Q5_K_M、Q6_K 或 Q8_0 格式 GGUF 檔案。</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>Hearth&apos;s own kernel does not run on this processor: {0}</source>
        <translation>Hearth 自己的核心無法在這顆處理器上執行：{0}</translation>
    </message>
    <message>
        <location line="+1"/>
        <source>Replies still work on ONNX Runtime&apos;s kernels; a smaller model is faster.</source>
        <translation>回覆仍可使用 ONNX Runtime 的核心生成；更小的模型會更快。</translation>
    </message>
    <message>
        <location line="+6"/>
        <source>The disk is nearly full: {0} GB free where Hearth keeps its chats and caches.</source>
        <translation>磁碟快滿了：Hearth 存放對話和快取的磁碟只剩 {0} GB。</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>Free some space on that disk: without room the caches that spare re-reading a chat are not saved.</source>
        <translation>請在該磁碟上騰出空間：空間不足時，免去重新讀取對話的快取無法儲存。</translation>
    </message>
    <message>
        <location line="+7"/>
        <source>The context is full: the {0} oldest messages were left out, and each reply reads the whole context again.</source>
        <translation>上下文已滿：最早的 {0} 條訊息被略去，而且每次回覆都要重新讀取整個上下文。</translation>
    </message>
    <message>
        <location line="+5"/>
        <source>Start a new chat, or choose a model with a longer context.</source>
        <translation>開始新對話，或選用上下文更長的模型。</translation>
    </message>
    <message>
        <location line="+3"/>
        <source>The last reply ran at {0:.1f} tokens/s; this computer should reach about {1:.1f}.</source>
        <translation>上一條回覆的速度為 {0:.1f} token/秒；這臺電腦應能達到約 {1:.1f}。</translation>
    </message>
    <message>
        <location line="+4"/>
        <source>If no other cause is listed, close busy programs and ask again; a smaller model is faster.</source>
        <translation>如果沒有列出其他原因，請關閉繁忙的程式後再問一次；更小的模型會更快。</translation>
    </message>
</context>
<context>
    <name>WhySlowNotice</name>
    <message>
        <location filename="../../app/views/chat/why_slow.py" line="+44"/>
        <location line="+36"/>
        <source>Why is this slow?</source>
        <translation>為什麼這麼慢？</translation>
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
        <translation>目前沒有什麼拖慢 Hearth。</translation>
    </message>
    <message>
        <location line="+9"/>
        <source>Last reply: {0} tokens/s (expected about {1}). Free memory: {2:.1f} GB. Free disk: {3} GB. Cores in use: {4}.</source>
        <translation>上一條回覆：{0} token/秒（預計約 {1}）。可用記憶體：{2:.1f} GB。可用磁碟：{3} GB。使用中的核心：{4}。</translation>
    </message>
</context>
<context>
    <name>WindowDocuments</name>
    <message>
        <location filename="../../app/views/documents/window_documents.py" line="-22"/>
        <source>Document collections…</source>
        <translation>文件集…</translation>
    </message>
    <message>
        <location line="+14"/>
        <source>Collection {0}: {1}</source>
        <translation>文件集 {0}：{1}</translation>
    </message>
</context>
<context>
    <name>self.window</name>
    <message>
        <source>Exported {0} chat(s) to {1}</source>
        <translation type="vanished">已將 {0} 個對話匯出到 {1}</translation>
    </message>
    <message>
        <source>Imported {0} chat(s).</source>
        <translation type="vanished">已匯入 {0} 個對話。</translation>
    </message>
</context>
</TS>
