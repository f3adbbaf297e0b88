import CofferKit
import Foundation

#if canImport(FoundationXML)
import FoundationXML
#endif

/// A read running on its own thread into an ``InterchangeStream``
/// (``KeePassXML/stream(path:)``).
public final class StreamedRead: Sendable {
    public let stream: InterchangeStream
    let box: Box

    init(stream: InterchangeStream, box: Box) {
        self.stream = stream
        self.box = box
    }

    /// The reader's warnings, once the import that used ``stream`` returned.
    public var warnings: [InterchangeWarning] { box.get() }

    final class Box: @unchecked Sendable {
        private let lock = NSLock()
        private var warnings: [InterchangeWarning] = []
        func set(_ w: [InterchangeWarning]) {
            lock.lock()
            warnings = w
            lock.unlock()
        }
        func get() -> [InterchangeWarning] {
            lock.lock()
            defer { lock.unlock() }
            return warnings
        }
    }
}

/// KeePass 2 XML, as `keepassxc-cli export --format xml` and KeePass write it
/// (docs/import-export.md#keepass-xml). Read with the platform's streaming
/// (SAX) parser: the document is never held as a tree.
public enum KeePassXML {
    /// Reads the XML in `data`; `file` names it in messages. `binaries`:
    /// attachment bytes by pool id from outside the XML (a KDBX 4 inner
    /// header), used for a `<Value Ref="N"/>` the XML's own
    /// `<Meta><Binaries>` does not hold.
    /// An entry Coffer wrote keeps its type (`CofferType`, as in a kdbx
    /// export: ``KDBX/restoringType(_:)``).
    public static func read(_ data: Data, file: String, binaries: [Int: Data]? = nil) throws(CofferError) -> ImportedFile {
        var read = try read(stream: InputStream(data: data), file: file, entities: DTDEntityUses.find(data), binaries: binaries)
        read.entries = read.entries.map(KDBX.restoringType)
        return read
    }

    /// Reads the XML file at `path` in chunks: it is never all in memory.
    public static func read(path: String, binaries: [Int: Data]? = nil) throws(CofferError) -> ImportedFile {
        try ImportError.checkReadable(path)
        guard let stream = InputStream(fileAtPath: path) else {
            throw CofferError(.fileNotFound, "cannot read \(path)", hint: "check the file's permissions")
        }
        var read = try read(stream: stream, file: path, entities: DTDEntityUses.find(path: path), binaries: binaries)
        read.entries = read.entries.map(KDBX.restoringType)
        return read
    }

    /// Reads the XML file at `path` into `stream`, entry by entry, while
    /// an import stores them (run on the stream's thread, see
    /// ``stream(path:binaries:)``); returns the warnings.
    public static func read(path: String, into stream: InterchangeStream, binaries: [Int: Data]? = nil) throws(CofferError) -> [InterchangeWarning] {
        try ImportError.checkReadable(path)
        guard let input = InputStream(fileAtPath: path) else {
            throw CofferError(.fileNotFound, "cannot read \(path)", hint: "check the file's permissions")
        }
        return try read(stream: input, file: path, entities: DTDEntityUses.find(path: path), binaries: binaries, sink: { stream.push(KDBX.restoringType($0)) })
            .warnings
    }

    /// Starts reading the file at `path` on a second thread for
    /// ``Vault/importEntries(_:options:progress:)-(InterchangeStream,_,_)``:
    /// the file is parsed while the entries before are stored, and never
    /// all in memory. A missing or unreadable file fails here, before any
    /// transaction.
    public static func stream(path: String, binaries: [Int: Data]? = nil) throws(CofferError) -> StreamedRead {
        try ImportError.checkReadable(path)
        let box = StreamedRead.Box()
        let stream = InterchangeStream.start(expectedCount: countEntries(path: path)) { s throws(CofferError) in
            box.set(try read(path: path, into: s, binaries: binaries))
        }
        return StreamedRead(stream: stream, box: box)
    }

    /// At least the number of entries in the file at `path` (history and
    /// recycle-bin entries count too): its `<Entry` start tags, counted on
    /// the mapped file without parsing it. 0 when it cannot be read.
    static func countEntries(path: String) -> Int {
        guard let data = try? Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped) else { return 0 }
        return countEntries(data)
    }

    /// At least the number of entries in the XML in `data` (as
    /// ``countEntries(path:)``).
    static func countEntries(_ data: some ContiguousBytes) -> Int {
        let tag = Array("<Entry".utf8)
        return data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> Int in
            guard let base = raw.baseAddress else { return 0 }
            let n = raw.count
            var count = 0
            var i = 0
            while i + tag.count < n {
                guard let hit = memchr(base + i, Int32(UInt8(ascii: "<")), n - i - tag.count) else { break }
                let at = base.distance(to: UnsafeRawPointer(hit))
                var match = true
                for k in 1..<tag.count where raw[at + k] != tag[k] {
                    match = false
                    break
                }
                if match {
                    let after = raw[at + tag.count]
                    if after == UInt8(ascii: ">") || after == UInt8(ascii: "/") || after == 0x20 || after == 0x09 || after == 0x0A || after == 0x0D {
                        count += 1
                    }
                }
                i = at + 1
            }
            return count
        }
    }

    /// `entities`: where the file uses entities of its own DTD, which the
    /// parser drops (``DTDEntityUses``).
    /// A KDBX file's inner XML (``KDBX``): `pool` holds the attachments
    /// of a KDBX 4 inner header by index; `unprotect` turns the base64
    /// text of a `Protected="True"` value into its plaintext bytes (the
    /// inner random stream, consumed in document order), nil when it is
    /// not valid base64. `binaries`: attachments referred to but missing
    /// from the XML's own pool, by id.
    static func read(
        stream: InputStream, file: String, entities: DTDEntityUses = .none, binaries: [Int: Data]? = nil,
        sink: ((InterchangeEntry) -> Bool)? = nil, pool: [String: BinaryData] = [:], unprotect: ((String) -> [UInt8]?)? = nil
    ) throws(CofferError) -> ImportedFile {
        // Fed to libxml2 in chunks (a stream): a whole buffer of more than
        // about 10 MB in one piece trips its "huge input" limit.
        let parser = XMLParser(stream: stream)
        let reader = Reader(file: file)
        reader.sink = sink
        reader.entities = entities
        reader.external = binaries
        reader.pool = pool
        reader.unprotect = unprotect
        parser.delegate = reader
        parser.shouldResolveExternalEntities = false
        let ok = parser.parse()
        if let failure = reader.failure { throw failure }
        // The import stopped taking entries (it failed): nothing more to say.
        if reader.stopped { return reader.result }
        guard ok, parser.parserError == nil, reader.sawRoot, reader.closed else {
            let why = parser.parserError.map { ($0 as NSError).localizedDescription } ?? "not a KeePass XML file"
            let line = parser.lineNumber
            if !reader.sawKeePassFile || (ok && parser.parserError == nil && reader.closed) {
                throw ImportError.bad(
                    file, nil, "not a KeePass XML file (no <KeePassFile><Root>)", hint: "export the database with `keepassxc-cli export --format xml`")
            }
            if ok && parser.parserError == nil { throw ImportError.bad(file, "line \(line)", "the XML ends before </KeePassFile> (truncated file?)") }
            throw ImportError.bad(file, "line \(line)", "malformed XML (\(why))")
        }
        return reader.result
    }

    /// The strings KeePass gives every entry, empty or not.
    static let standardKeys: Set<String> = ["UserName", "Password", "URL", "Notes", "otp"]

    /// Maps a KeePass string key to a Coffer field name.
    static func fieldName(_ key: String) -> String {
        switch key {
        case "UserName": return "username"
        case "Password": return "password"
        case "URL": return "url"
        case "Notes": return "notes"
        case "otp": return "totp"
        default:
            if key == "KP2A_URL" || key.hasPrefix("KP2A_URL_") { return "url" }
            return key
        }
    }

    /// An attachment's content as the file gives it, decoded.
    enum BinaryData {
        case bytes([UInt8])
        /// More than ``Field/maxValueBytes`` once decoded.
        case tooLarge
        /// Bad base64 or gzip; says why.
        case malformed(String)
    }

    /// Where an entry's attachment is: in the pool `<Meta><Binaries>`
    /// (`<Value Ref="N"/>`, what KeePassXC and KeePass write) or inline in
    /// the entry's `<Value>` (older KeePass 2 files).
    enum BinaryRef {
        case pool(String)
        case inline(BinaryData)
    }

    /// Base64 text longer than this decodes (or, compressed, inflates:
    /// deflate never shrinks data by more than a few bytes per block) to
    /// more than ``Field/maxValueBytes``: it is not kept in memory.
    static let maxBase64Text = (Field.maxValueBytes + 1024 * 1024) / 3 * 4

    /// Decodes an attachment's base64 text (gzip inside when `compressed`).
    static func decodeBinary(_ text: String, compressed: Bool, overflowed: Bool) -> BinaryData {
        if overflowed { return .tooLarge }
        var clean = [UInt8]()
        clean.reserveCapacity(text.utf8.count)
        for b in text.utf8 where b != 0x20 && b != 0x09 && b != 0x0A && b != 0x0D { clean.append(b) }
        guard let data = Data(base64Encoded: Data(clean)) else { return .malformed("its data is not valid base64") }
        // KeePassXC writes an empty attachment as `<Binary ID="N" Compressed="True"/>`.
        guard compressed, !data.isEmpty else { return data.count > Field.maxValueBytes ? .tooLarge : .bytes([UInt8](data)) }
        switch Gzip.decompress([UInt8](data), limit: Field.maxValueBytes) {
        case .success(let bytes): return .bytes(bytes)
        case .failure(.tooLarge): return .tooLarge
        case .failure(.malformed(let why)): return .malformed("its data is marked Compressed but is not valid gzip (\(why))")
        }
    }

    final class EntryBuilder {
        var strings: [(key: String, value: String, protected: Bool)] = []
        var tags: [String] = []
        var expires = false
        var expiryTime: String?
        var modified: String?
        var binaries: [(key: String, ref: BinaryRef)] = []
        var history: [EntryBuilder] = []
        var line: Int
        /// Its place among the file's `<Entry>` elements (history ones
        /// counted too), as ``DTDEntityUses`` numbers them.
        var ordinal = 0
        init(line: Int) { self.line = line }

        var title: String { strings.first(where: { $0.key == "Title" })?.value ?? "" }
    }

    final class Reader: NSObject, XMLParserDelegate {
        let file: String
        var result = ImportedFile()
        var failure: CofferError?
        var sawKeePassFile = false
        var sawRoot = false
        var closed = false
        var recycleBin: String?
        /// Names of the groups we are in (the outermost is the database's root).
        var groups: [(name: String, uuid: String)] = []
        var entries: [EntryBuilder] = []
        var path: [String] = []
        var text = ""
        var key = ""
        var value = ""
        var valueProtected = false
        var inRecycleBin: Int?
        var skippedInBin = 0
        var entryNumber = 0
        /// `<Meta><Binaries>`: attachment data by `ID`, decoded.
        var pool: [String: BinaryData] = [:]
        /// Attachment bytes from outside the XML (a KDBX 4 inner header).
        var external: [Int: Data]?
        /// Attachments of the entry being finished whose bytes are neither
        /// in the pool nor in ``external``, in order.
        var missingAttachments: [String] = []
        /// Inside an attachment's base64 text (pool or inline).
        var capturingBinary = false
        var binaryOverflow = false
        var binaryCompressed = false
        var binaryID: String?
        /// The entry attachment being read: `Ref`, or its inline data.
        var binaryRef: String?
        var binaryInline: BinaryData?
        /// Attachments already warned about for the entry being finished.
        var warnedAttachments = Set<String>()
        /// Entries already warned about for an unreadable TOTP.
        var warnedTOTP = Set<String>()
        /// Where finished entries go (a streamed read); else `result`.
        var sink: ((InterchangeEntry) -> Bool)?
        /// The sink took no more entries.
        var stopped = false
        /// Entities of the file's DTD the parser dropped, by entry.
        var entities = DTDEntityUses.none
        /// `<Entry>` elements started so far.
        var entryOrdinal = 0
        /// KDBX: decrypts a `Protected="True"` value (see
        /// ``KeePassXML/read(stream:file:entities:sink:pool:unprotect:)``).
        var unprotect: ((String) -> [UInt8]?)?
        /// The value or binary being read is encrypted by the KDBX stream.
        var valueEncrypted = false
        var binaryEncrypted = false

        func refuseLargeProtected(_ parser: XMLParser) {
            failure = ImportError.bad(
                file, "line \(parser.lineNumber)", "a protected attachment is larger than 16 MiB; coffer cannot read the values after it",
                hint: "remove or shrink the attachment in KeePass, or save the database as KDBX 4; nothing was imported")
            parser.abortParsing()
        }

        /// `text` decrypted when `encrypted` (KDBX), else `text`; nil
        /// (after recording the failure) when it cannot be decrypted.
        func plain(_ text: String, encrypted: Bool, _ parser: XMLParser) -> [UInt8]? {
            guard encrypted, let unprotect else { return Array(text.utf8) }
            if let bytes = unprotect(text) { return bytes }
            failure = ImportError.bad(file, "line \(parser.lineNumber)", "a protected value is not valid base64 (damaged database?)")
            parser.abortParsing()
            return nil
        }

        init(file: String) { self.file = file }

        func parser(_ parser: XMLParser, didStartElement name: String, namespaceURI: String?, qualifiedName: String?, attributes: [String: String] = [:]) {
            path.append(name)
            text = ""
            switch name {
            case "KeePassFile": if path.count == 1 { sawKeePassFile = true }
            case "Root": if path.count == 2 && sawKeePassFile { sawRoot = true }
            case "Group":
                if entries.isEmpty { groups.append(("", "")) }
            case "Entry":
                let e = EntryBuilder(line: parser.lineNumber)
                e.ordinal = entryOrdinal
                entryOrdinal += 1
                if path.dropLast().last == "History", let owner = entries.last {
                    owner.history.append(e)
                }
                entries.append(e)
            case "Value":
                valueProtected = (attributes["Protected"] ?? attributes["ProtectInMemory"] ?? "").lowercased() == "true"
                valueEncrypted = unprotect != nil && attributes["Protected"]?.lowercased() == "true"
                binaryEncrypted = valueEncrypted
                if path.count >= 2 && path[path.count - 2] == "Binary" && !entries.isEmpty {
                    binaryRef = attributes["Ref"]
                    binaryInline = nil
                    startBinary(compressed: attributes["Compressed"], capture: binaryRef == nil)
                }
            case "Binary" where path.count >= 2 && path[path.count - 2] == "Binaries":
                binaryID = attributes["ID"]
                binaryEncrypted = unprotect != nil && attributes["Protected"]?.lowercased() == "true"
                startBinary(compressed: attributes["Compressed"], capture: true)
            default: break
            }
        }

        func startBinary(compressed: String?, capture: Bool) {
            binaryCompressed = compressed?.lowercased() == "true"
            binaryOverflow = false
            capturingBinary = capture
        }

        func parser(_ parser: XMLParser, foundCharacters string: String) {
            if capturingBinary {
                // An attachment too large to import is not kept in memory.
                if binaryOverflow { return }
                if text.utf8.count + string.utf8.count > KeePassXML.maxBase64Text {
                    binaryOverflow = true
                    text = ""
                    return
                }
            }
            text += string
        }

        func parser(_ parser: XMLParser, didEndElement name: String, namespaceURI: String?, qualifiedName: String?) {
            defer {
                path.removeLast()
                text = ""
            }
            let parent = path.count >= 2 ? path[path.count - 2] : ""
            switch name {
            case "KeePassFile" where path.count == 1:
                closed = true
                for name in entities.outside {
                    result.warnings.append(InterchangeWarning(entry: "", Reader.entityWarning(name, where: "outside any entry (in a group's name?)")))
                }
            case "RecycleBinUUID" where parent == "Meta":
                recycleBin = text
            case "Name" where parent == "Group" && entries.isEmpty:
                groups[groups.count - 1].name = text
            case "UUID" where parent == "Group" && entries.isEmpty:
                groups[groups.count - 1].uuid = text
                if inRecycleBin == nil, let bin = recycleBin, !bin.isEmpty, text == bin, bin != "AAAAAAAAAAAAAAAAAAAAAA==" {
                    inRecycleBin = groups.count
                }
            case "Group" where entries.isEmpty:
                if inRecycleBin == groups.count { inRecycleBin = nil }
                groups.removeLast()
            case "Key" where parent == "String" || parent == "Binary":
                key = text
            case "Value" where parent == "String":
                value = text
                if valueEncrypted {
                    guard let bytes = plain(text, encrypted: true, parser) else { return }
                    guard let s = String(validating: bytes, as: UTF8.self) else {
                        failure = ImportError.bad(file, "line \(parser.lineNumber)", "a protected value is not UTF-8 once decrypted (damaged database?)")
                        parser.abortParsing()
                        return
                    }
                    value = s
                }
            case "String" where !entries.isEmpty && parent == "Entry":
                entries.last!.strings.append((key, value, valueProtected))
                key = ""
                value = ""
                valueProtected = false
            case "Binary" where parent == "Binaries":
                if binaryEncrypted {
                    // Its length is what the stream must skip; unknown once dropped.
                    guard !binaryOverflow else { return refuseLargeProtected(parser) }
                    guard let bytes = plain(text, encrypted: true, parser) else { return }
                    text = Data(bytes).base64EncodedString()
                }
                if let id = binaryID { pool[id] = KeePassXML.decodeBinary(text, compressed: binaryCompressed, overflowed: binaryOverflow) }
                binaryID = nil
                capturingBinary = false
            case "Value" where parent == "Binary" && !entries.isEmpty:
                if binaryEncrypted && binaryRef == nil {
                    guard !binaryOverflow else { return refuseLargeProtected(parser) }
                    guard let bytes = plain(text, encrypted: true, parser) else { return }
                    text = Data(bytes).base64EncodedString()
                }
                if binaryRef == nil { binaryInline = KeePassXML.decodeBinary(text, compressed: binaryCompressed, overflowed: binaryOverflow) }
                capturingBinary = false
            case "Binary" where parent == "Entry":
                if let e = entries.last {
                    e.binaries.append((key, binaryRef.map { .pool($0) } ?? .inline(binaryInline ?? .bytes([]))))
                }
                key = ""
                binaryRef = nil
                binaryInline = nil
            case "Tags" where parent == "Entry" && !entries.isEmpty:
                entries.last!.tags = text.split(whereSeparator: { $0 == ";" || $0 == "," }).map { $0.trimmingCharacters(in: .whitespaces) }.filter {
                    !$0.isEmpty
                }
            case "Expires" where parent == "Times" && !entries.isEmpty:
                entries.last!.expires = text.lowercased() == "true"
            case "ExpiryTime" where parent == "Times" && !entries.isEmpty:
                entries.last!.expiryTime = text
            case "LastModificationTime" where parent == "Times" && !entries.isEmpty:
                entries.last!.modified = text
            case "Entry":
                guard let e = entries.popLast() else { return }
                if path.count >= 2 && path[path.count - 2] == "History" { return }
                if inRecycleBin != nil {
                    skippedInBin += 1
                    return
                }
                entryNumber += 1
                do { try finish(e) } catch {
                    failure = error
                    parser.abortParsing()
                }
                if stopped { parser.abortParsing() }
            case "Root":
                if skippedInBin > 0 {
                    result.warnings.append(
                        InterchangeWarning(entry: "", "\(skippedInBin) entr\(skippedInBin == 1 ? "y" : "ies") in the recycle bin were not imported"))
                }
            default: break
            }
        }

        func parser(_ parser: XMLParser, parseErrorOccurred parseError: any Error) {}

        /// The warning for entity `name` of the file's DTD, used `where`:
        /// names the entity, never its text or a value.
        static func entityWarning(_ name: String, where place: String) -> String {
            "the XML entity '\(name)' declared in the file's DTD is used \(place) and was not expanded (coffer reads no DTD): its text is missing from what was imported; check it by hand"
        }

        func fields(of e: EntryBuilder, name: String) throws(CofferError) -> [Field] {
            var entry = InterchangeEntry(name: name, type: .login)
            let order = ["UserName", "Password", "URL", "Notes"]
            var strings = e.strings.filter { $0.key != "Title" }
            // TOTP in any of the KeePass layouts → one `totp` URI.
            var totp: String?
            let byKey = Dictionary(strings.map { ($0.key, $0.value) }, uniquingKeysWith: { a, _ in a })
            switch KeePassOTP.extract(byKey, label: e.title) {
            case .none: break
            case .mapped(let uri, let consumed):
                totp = uri
                strings.removeAll { consumed.contains($0.key) }
            case .unreadable(let why, let keys):
                if warnedTOTP.insert(name).inserted {
                    let list = keys.map { "'\($0)'" }.joined(separator: ", ")
                    result.warnings.append(
                        InterchangeWarning(
                            entry: name,
                            "its TOTP cannot be read (\(why)); kept as the field\(keys.count == 1 ? "" : "s") \(list), which `coffer otp` does not use"))
                }
                // `otp` that is not a URI must not become `totp` either.
                if keys.contains("otp"), let i = strings.firstIndex(where: { $0.key == "otp" }) { strings[i].key = "otp (KeePass)" }
            }
            let sorted = strings.sorted { a, b in
                (order.firstIndex(of: a.key) ?? Int.max) < (order.firstIndex(of: b.key) ?? Int.max)
            }
            for s in sorted {
                let field = KeePassXML.fieldName(s.key)
                let secret = s.key == "Password" || s.protected || KeePassOTP.secretKeys.contains(s.key)
                // KeePass writes its standard strings even when empty; an
                // empty custom string is a field the user made: kept.
                let standard = KeePassXML.standardKeys.contains(s.key) || field == "url"
                entry.append(field, s.value, secret: secret, keepEmpty: !standard)
            }
            if let totp { entry.append("totp", totp, secret: true) }
            var fields = entry.fields
            try attach(e, name: name, to: &fields)
            return fields
        }

        /// The entry's attachments as binary fields (secret, like `coffer
        /// attach`), named by the attachment (`2`, `3`… appended to a name
        /// already used). Too large for a field, or for the item: one
        /// warning per attachment, never its content. A reference to a
        /// binary the file does not hold (KeePassXC's XML export of a KDBX 4
        /// database): the entry is imported without it, with one warning
        /// per entry (``finish(_:)``). Bad base64 or gzip: the whole import
        /// is refused, naming the entry.
        func attach(_ e: EntryBuilder, name: String, to fields: inout [Field]) throws(CofferError) {
            var total = fields.reduce(0) { $0 + $1.bytes.count }
            for (key, ref) in e.binaries {
                let data: BinaryData
                switch ref {
                case .inline(let d): data = d
                case .pool(let id):
                    if let d = pool[id] {
                        data = d
                    } else if let n = Int(id), let bytes = external?[n] {
                        data = bytes.count > Field.maxValueBytes ? .tooLarge : .bytes([UInt8](bytes))
                    } else {
                        // KeePassXC's XML export of a KDBX 4 database: the
                        // bytes are in the database's inner header only.
                        if !missingAttachments.contains(key) { missingAttachments.append(key) }
                        continue
                    }
                }
                let why: String
                switch data {
                case .malformed(let reason):
                    throw ImportError.bad(
                        file, "line \(e.line) (entry '\(name)')", "attachment '\(key)': \(reason)", hint: "export the database again; nothing was imported")
                case .tooLarge:
                    why = "it is larger than 16 MiB, the most a Coffer field holds"
                case .bytes(let bytes):
                    if total + bytes.count <= Field.maxItemBytes {
                        total += bytes.count
                        let base = InterchangeEntry.cleanFieldName(key)
                        var candidate = base
                        var n = 2
                        while fields.contains(where: { $0.name == candidate }) {
                            candidate = base + String(n)
                            n += 1
                        }
                        fields.append(Field(name: candidate, bytes: bytes, isSecret: true, isFile: true))
                        continue
                    }
                    why = "with it the item's values would exceed 28 MiB, the most a Coffer item holds"
                }
                if warnedAttachments.insert(key).inserted {
                    result.warnings.append(InterchangeWarning(entry: name, "attachment '\(key)' was not imported: \(why); it is still in the KeePass database"))
                }
            }
        }

        func finish(_ e: EntryBuilder) throws(CofferError) {
            let groupPath = groups.dropFirst().map(\.name)
            let title = e.title.isEmpty ? "untitled" : e.title.replacingOccurrences(of: "/", with: "∕")
            let name = (groupPath.map { $0.replacingOccurrences(of: "/", with: "∕") } + [title]).joined(separator: "/")
            var entry = InterchangeEntry(name: name, type: .login, origin: "line \(e.line) (entry '\(name)')")
            warnedAttachments.removeAll()
            missingAttachments.removeAll()
            if !entities.isEmpty {
                var used: [String] = []
                for o in [e.ordinal] + e.history.map(\.ordinal) {
                    for n in entities.byEntry[o] ?? [] where !used.contains(n) { used.append(n) }
                }
                for n in used { result.warnings.append(InterchangeWarning(entry: name, Reader.entityWarning(n, where: "in this entry"))) }
            }
            entry.fields = try fields(of: e, name: name)
            let names = Set(entry.fields.map(\.name))
            if names.isSubset(of: ["notes"]) && !names.isEmpty {
                entry.type = .note
                entry.fields = entry.fields.map { Field(name: $0.name, value: $0.value, isSecret: true) }
            }
            entry.tags = e.tags
            if e.expires, let t = e.expiryTime, let d = KeePassXML.date(t) { entry.expires = Day(d) }
            for h in e.history {
                let version = InterchangeVersion(fields: try fields(of: h, name: name), writtenAt: h.modified.flatMap(KeePassXML.date))
                if !version.fields.isEmpty { entry.history.append(version) }
            }
            if !missingAttachments.isEmpty {
                let list = missingAttachments.map { "'\($0)'" }.joined(separator: ", ")
                let what = missingAttachments.count == 1 ? "attachment \(list) was" : "attachments \(list) were"
                result.warnings.append(
                    InterchangeWarning(
                        entry: name,
                        "\(what) not imported: the XML refers to \(missingAttachments.count == 1 ? "its bytes" : "their bytes") but does not hold them (KeePassXC's XML export of a KDBX 4 database keeps attachments in the .kdbx only); import the .kdbx instead (coffer import --from kdbx)"
                    ))
            }
            if let sink {
                if !sink(entry) { stopped = true }
            } else {
                result.entries.append(entry)
            }
        }
    }

    /// KeePass times: ISO 8601 (`2024-05-01T10:00:00Z`) in XML exports, or
    /// base64 of a little-endian count of seconds since 0001-01-01 (KDBX 4).
    static func date(_ text: String) -> Date? {
        let t = text.trimmingCharacters(in: .whitespacesAndNewlines)
        let f = ISO8601DateFormatter()
        if let d = f.date(from: t) { return d }
        if let data = Data(base64Encoded: t), data.count == 8 {
            var seconds: Int64 = 0
            for (i, b) in data.enumerated() { seconds |= Int64(b) << (8 * Int64(i)) }
            // 0001-01-01 to 1970-01-01 is 62,135,596,800 s.
            let unix = seconds &- 62_135_596_800
            guard unix > -62_135_596_800, unix < 253_402_300_800 else { return nil }
            return Date(timeIntervalSince1970: TimeInterval(unix))
        }
        return nil
    }

    // MARK: Writing

    /// KeePass 2 XML that `keepassxc-cli import` accepts: item names become
    /// groups and a title, fields become the standard strings (`username` →
    /// UserName, `password` → Password, `url` → URL, `notes` → Notes,
    /// `totp` → otp) or custom strings (secret ones protected). Attachments
    /// become KeePass binaries: their bytes (base64, uncompressed) in
    /// `Meta/Binaries`, each stored once, referenced from the entry by
    /// `<Binary><Key>NAME</Key><Value Ref="ID"/></Binary>` (KeePass 2.x /
    /// KDBX 3.1 XML, which KeePassXC's `KdbxXmlReader` reads).
    public static func write(_ entries: [InterchangeEntry]) -> Data {
        let root = KeePassGroup.tree(of: entries, rootName: "Root")
        var out = ""
        // Attachments' bytes, each distinct content once, by pool id.
        var binaries: [[UInt8]] = []
        var binaryIDs: [[UInt8]: Int] = [:]
        func binaryID(_ bytes: [UInt8]) -> Int {
            if let id = binaryIDs[bytes] { return id }
            binaries.append(bytes)
            binaryIDs[bytes] = binaries.count - 1
            return binaries.count - 1
        }
        func uuid() -> String { withUnsafeBytes(of: UUID().uuid) { Data($0).base64EncodedString() } }
        let iso = ISO8601DateFormatter()
        let now = iso.string(from: Date())
        func emit(_ g: KeePassGroup, depth: Int) {
            let pad = String(repeating: "\t", count: depth)
            out += "\(pad)<Group>\n\(pad)\t<UUID>\(uuid())</UUID>\n\(pad)\t<Name>\(escape(g.name))</Name>\n"
            for (title, e) in g.entries {
                out += "\(pad)\t<Entry>\n\(pad)\t\t<UUID>\(uuid())</UUID>\n"
                if !e.tags.isEmpty { out += "\(pad)\t\t<Tags>\(escape(e.tags.joined(separator: ";")))</Tags>\n" }
                out += "\(pad)\t\t<Times>\n\(pad)\t\t\t<LastModificationTime>\(now)</LastModificationTime>\n"
                if let d = e.expires {
                    out += "\(pad)\t\t\t<ExpiryTime>\(iso.string(from: d.date))</ExpiryTime>\n\(pad)\t\t\t<Expires>True</Expires>\n"
                } else {
                    out += "\(pad)\t\t\t<Expires>False</Expires>\n"
                }
                out += "\(pad)\t\t</Times>\n"
                // The same keys as a kdbx export (``KDBXWriter/key(_:type:)``):
                // an `api-key`'s key is the Password, and a type KeePass
                // lacks is kept in `CofferType`; a key already taken keeps
                // the field's own name, or gets " (coffer)" appended.
                var strings: [(String, String, Bool)] = [("Title", title, false)]
                if e.type != .login && e.type != .custom { strings.append((KDBX.typeKey, e.type.rawValue, false)) }
                var used: Set<String> = Set(strings.map(\.0))
                for f in e.fields where !f.isFile {
                    var key = KDBXWriter.key(f.name, type: e.type)
                    if used.contains(key) { key = f.name }
                    while used.contains(key) { key += " (coffer)" }
                    used.insert(key)
                    strings.append((key, f.value, f.isSecret))
                }
                for (k, v, secret) in strings {
                    out += "\(pad)\t\t<String>\n\(pad)\t\t\t<Key>\(escape(k))</Key>\n"
                    out += secret ? "\(pad)\t\t\t<Value ProtectInMemory=\"True\">\(escape(v))</Value>\n" : "\(pad)\t\t\t<Value>\(escape(v))</Value>\n"
                    out += "\(pad)\t\t</String>\n"
                }
                for f in e.fields where f.isFile {
                    out +=
                        "\(pad)\t\t<Binary>\n\(pad)\t\t\t<Key>\(escape(f.name))</Key>\n\(pad)\t\t\t<Value Ref=\"\(binaryID(f.bytes))\"/>\n\(pad)\t\t</Binary>\n"
                }
                out += "\(pad)\t</Entry>\n"
            }
            for name in g.order { emit(g.groups[name]!, depth: depth + 1) }
            out += "\(pad)</Group>\n"
        }
        emit(root, depth: 2)
        // The file's bytes are written once, straight into one buffer (the
        // base64 of the attachments is most of it).
        let base64Size = binaries.reduce(0) { $0 + ($1.count + 2) / 3 * 4 + 64 }
        var data = Data(capacity: 512 + base64Size + out.utf8.count)
        data.append(contentsOf: "<?xml version=\"1.0\" encoding=\"UTF-8\" standalone=\"yes\"?>\n<KeePassFile>\n".utf8)
        data.append(
            contentsOf:
                "\t<Meta>\n\t\t<Generator>Coffer</Generator>\n\t\t<DatabaseName>Coffer export</DatabaseName>\n\t\t<RecycleBinEnabled>False</RecycleBinEnabled>\n"
                .utf8)
        if !binaries.isEmpty {
            data.append(contentsOf: "\t\t<Binaries>\n".utf8)
            for (id, bytes) in binaries.enumerated() {
                data.append(contentsOf: "\t\t\t<Binary ID=\"\(id)\" Compressed=\"False\">".utf8)
                data.append(Data(bytes).base64EncodedData())
                data.append(contentsOf: "</Binary>\n".utf8)
            }
            data.append(contentsOf: "\t\t</Binaries>\n".utf8)
        }
        data.append(contentsOf: "\t</Meta>\n\t<Root>\n".utf8)
        data.append(contentsOf: out.utf8)
        data.append(contentsOf: "\t</Root>\n</KeePassFile>\n".utf8)
        return data
    }

    /// XML text escaping; characters XML 1.0 cannot hold at all are dropped.
    static func escape(_ s: String) -> String {
        var out = ""
        out.reserveCapacity(s.utf8.count)
        for u in s.unicodeScalars {
            switch u {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "\r": out += "&#13;"
            default:
                let v = u.value
                if v == 0x9 || v == 0xA || (v >= 0x20 && v <= 0xD7FF) || (v >= 0xE000 && v <= 0xFFFD) || v >= 0x10000 {
                    out.unicodeScalars.append(u)
                }
            }
        }
        return out
    }
}

/// The folders of exported items as KeePass groups: a name's `/`-separated
/// parts before the last are nested groups, in first-seen order (KeePass
/// XML and KDBX export).
final class KeePassGroup {
    var name: String
    var groups: [String: KeePassGroup] = [:]
    var order: [String] = []
    var entries: [(String, InterchangeEntry)] = []
    init(_ name: String) { self.name = name }

    static func tree(of entries: [InterchangeEntry], rootName: String) -> KeePassGroup {
        let root = KeePassGroup(rootName)
        for e in entries {
            let parts = e.name.split(separator: "/").map(String.init)
            var g = root
            for p in parts.dropLast() {
                if let next = g.groups[p] {
                    g = next
                } else {
                    let n = KeePassGroup(p)
                    g.groups[p] = n
                    g.order.append(p)
                    g = n
                }
            }
            g.entries.append((parts.last ?? e.name, e))
        }
        return root
    }
}
