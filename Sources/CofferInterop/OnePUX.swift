import CofferKit
import Foundation
import ZIPFoundation

/// 1Password's 1PUX export (docs/import-export.md#1password-1pux): a zip
/// holding `export.data`, JSON of accounts → vaults → items, documented at
/// support.1password.com/1pux-format/. Documents (`details.documentAttributes`)
/// and file fields (a section field whose value is `{"file": {…}}`) refer
/// to `files/<documentId>__<fileName>` in the zip; they become attachments
/// (binary fields named by the file name).
public enum OnePUX {
    /// Item category ids (1PUX `categoryUuid`).
    static let categories: [String: String] = [
        "001": "login", "002": "credit card", "003": "secure note", "004": "identity", "005": "password",
        "006": "document", "100": "software license", "101": "bank account", "102": "database",
        "103": "driver license", "104": "outdoor license", "105": "membership", "106": "passport",
        "107": "rewards", "108": "social security number", "109": "wireless router", "110": "server",
        "111": "email account", "112": "API credential", "113": "medical record", "114": "SSH key",
    ]

    public static func read(path: String) throws(CofferError) -> ImportedFile {
        let bytes = try ImportError.read(path)
        let archive: Archive
        do {
            archive = try Archive(data: bytes, accessMode: .read)
        } catch {
            throw ImportError.bad(path, nil, "not a zip archive, so not a 1PUX export", hint: "export from 1Password with File > Export > 1PUX")
        }
        guard let entry = archive["export.data"] else {
            throw ImportError.bad(
                path, nil, "the zip holds no export.data, so it is not a 1PUX export", hint: "export from 1Password with File > Export > 1PUX")
        }
        guard entry.uncompressedSize < 1 << 30 else {
            throw ImportError.bad(path, "export.data", "larger than 1 GiB")
        }
        var data = Data()
        do {
            // ZIPFoundation returns the CRC-32 of what it extracted but does
            // not compare it: a damaged member is caught here.
            let crc = try archive.extract(entry, skipCRC32: false) { chunk in data.append(chunk) }
            guard crc == entry.checksum else { throw Archive.ArchiveError.invalidCRC32 }
        } catch {
            throw ImportError.bad(path, "export.data", "cannot be extracted (\(describe(error)))")
        }
        return try read(data, file: "\(path) (export.data)", files: ArchiveFiles(archive: archive, path: path))
    }

    /// A zip error for a message.
    static func describe(_ error: any Error) -> String {
        if case Archive.ArchiveError.invalidCRC32 = error { return "its CRC-32 does not match its data: the archive is damaged" }
        return "\(error)"
    }

    /// What the archive holds at a `files/…` path.
    public enum Member: Sendable, Equatable {
        case bytes([UInt8])
        /// No member of that name.
        case missing
        /// Larger than a field may hold (its size in bytes, when known).
        case tooLarge(Int?)
    }

    /// Where the reader finds the `files/…` members an item refers to.
    public protocol Files {
        /// `files/<documentId>__<fileName>`; an error says why it cannot be
        /// read (the reader names the item).
        func read(documentId: String, fileName: String) throws(CofferError) -> Member
    }

    /// Members held in memory (by path), for tests and for `export.data`
    /// read alone (no members: every attachment is reported missing).
    public struct FilesInMemory: Files {
        public var members: [String: [UInt8]]
        public init(_ members: [String: [UInt8]] = [:]) { self.members = members }
        public func read(documentId: String, fileName: String) throws(CofferError) -> Member {
            guard let bytes = members["files/\(documentId)__\(fileName)"] else { return .missing }
            return bytes.count > Field.maxValueBytes ? .tooLarge(bytes.count) : .bytes(bytes)
        }
    }

    /// The members under `files/` of a 1PUX zip, extracted on demand.
    final class ArchiveFiles: Files {
        let archive: Archive
        let path: String
        lazy var byPath: [String: ZIPFoundation.Entry] = {
            var out: [String: ZIPFoundation.Entry] = [:]
            for e in archive where e.type == .file && e.path.hasPrefix("files/") { out[e.path] = e }
            return out
        }()

        init(archive: Archive, path: String) {
            self.archive = archive
            self.path = path
        }

        /// `files/<documentId>__<fileName>` exactly, else the one member
        /// starting with `files/<documentId>__` (a file name normalized
        /// differently).
        func read(documentId: String, fileName: String) throws(CofferError) -> Member {
            var found = byPath["files/\(documentId)__\(fileName)"]
            if found == nil {
                let candidates = byPath.keys.filter { $0.hasPrefix("files/\(documentId)__") }
                if candidates.count == 1, let only = candidates.first { found = byPath[only] }
            }
            guard let entry = found else { return .missing }
            guard entry.uncompressedSize <= UInt64(Field.maxValueBytes) else { return .tooLarge(Int(clamping: entry.uncompressedSize)) }
            var bytes: [UInt8] = []
            bytes.reserveCapacity(Int(entry.uncompressedSize))
            struct TooLarge: Error {}
            do {
                let crc = try archive.extract(entry, skipCRC32: false) { chunk in
                    // The size in the zip's directory may lie: stop at the limit.
                    guard bytes.count + chunk.count <= Field.maxValueBytes else { throw TooLarge() }
                    bytes.append(contentsOf: chunk)
                }
                guard crc == entry.checksum else { throw Archive.ArchiveError.invalidCRC32 }
            } catch is TooLarge {
                return .tooLarge(nil)
            } catch {
                throw CofferError(.badData, "the archive member \(entry.path) cannot be extracted (\(OnePUX.describe(error)))")
            }
            return .bytes(bytes)
        }
    }

    /// Reads the JSON of `export.data`; `files` gives the archive's
    /// `files/…` members.
    public static func read(_ data: Data, file: String, files: any Files = FilesInMemory()) throws(CofferError) -> ImportedFile {
        let root = try JSONObject(JSONObject.parse(data, file: file), file: file, place: "top level")
        guard root.has("accounts") else { throw ImportError.bad(file, nil, "no \"accounts\" list: not a 1PUX export.data") }
        let accounts = try root.objects("accounts")
        var out = ImportedFile()
        for (a, account) in accounts.enumerated() {
            let attrs = try account.object("attrs")
            let accountName = try attrs?.firstString("accountName", "name") ?? "account\(a + 1)"
            for (v, vault) in try account.objects("vaults").enumerated() {
                let vaultName = try vault.object("attrs")?.string("name") ?? "vault\(v + 1)"
                for (i, item) in try vault.objects("items").enumerated() {
                    let place = "accounts[\(a)].vaults[\(v)].items[\(i)]"
                    var prefix = [vaultName]
                    if accounts.count > 1 { prefix.insert(accountName, at: 0) }
                    if let e = try readItem(item, prefix: prefix, file: file, place: place, files: files, warnings: &out.warnings) {
                        out.entries.append(e)
                    }
                }
            }
        }
        return out
    }

    static func readItem(
        _ item: JSONObject, prefix: [String], file: String, place: String, files: any Files,
        warnings: inout [InterchangeWarning]
    ) throws(CofferError) -> InterchangeEntry? {
        let overview = try item.object("overview") ?? JSONObject(emptyIn: file, place: place)
        let details = try item.object("details") ?? JSONObject(emptyIn: file, place: place)
        let title = try overview.string("title") ?? ""
        let name = (prefix + [title.isEmpty ? "untitled" : title.replacingOccurrences(of: "/", with: "∕")]).map { $0.replacingOccurrences(of: "/", with: "∕") }
            .joined(separator: "/")
        let category = try item.string("categoryUuid") ?? "001"
        var e = InterchangeEntry(name: name, type: .custom, origin: "\(file): \(place) ('\(name)')")
        var attachments: [(Reference, String)] = []
        switch category {
        case "001", "005": e.type = .login
        case "003": e.type = .note
        default: e.type = .custom
        }
        if try item.string("state") == "archived" { e.tags.append("archived") }
        e.tags += try overview.strings("tags").map { $0.replacingOccurrences(of: ",", with: " ") }
        // Login fields (username/password by designation, others by name).
        for f in try details.objects("loginFields") {
            let value = try f.string("value") ?? ""
            switch try f.string("designation") ?? "" {
            case "username": e.append("username", value, secret: false)
            case "password": e.append("password", value, secret: true)
            default:
                if value.isEmpty { continue }
                e.append(try f.firstString("name", "id") ?? "field", value, secret: try f.string("fieldType") == "P")
            }
        }
        if let p = try details.string("password") { e.append("password", p, secret: true) }
        // URLs: the main one first, then the others.
        var urls: [String] = []
        if let u = try overview.string("url"), !u.isEmpty { urls.append(u) }
        for u in try overview.objects("urls") {
            if let s = try u.string("url"), !s.isEmpty, !urls.contains(s) { urls.append(s) }
        }
        for u in urls { e.append("url", u, secret: false) }
        for section in try details.objects("sections") {
            for f in try section.objects("fields") {
                let label = try f.firstString("title", "id") ?? "field"
                guard let value = try f.object("value") else { continue }
                guard let (kind, raw) = value.dict.first else { continue }
                switch kind {
                case "concealed", "creditCardNumber":
                    e.append(label, try value.string(kind) ?? "", secret: true)
                case "totp":
                    e.append("totp", try value.string(kind) ?? "", secret: true)
                case "string", "url", "phone", "creditCardType", "menu", "gender", "reference", "monthYear":
                    e.append(label, try value.string(kind) ?? "", secret: false)
                case "email":
                    if let s = raw as? String {
                        e.append(label, s, secret: false)
                    } else {
                        e.append(label, try value.object(kind)?.string("email_address") ?? "", secret: false)
                    }
                case "date":
                    if let n = try value.int(kind) {
                        e.append(label, Day(Date(timeIntervalSince1970: TimeInterval(n))).description, secret: false)
                    }
                case "address":
                    if let a = try value.object(kind) {
                        var parts: [String] = []
                        for k in ["street", "city", "state", "zip", "country"] {
                            if let s = try a.string(k), !s.isEmpty { parts.append(s) }
                        }
                        e.append(label, parts.joined(separator: "\n"), secret: false)
                    }
                case "sshKey":
                    if let s = raw as? String {
                        e.append(label, s, secret: true)
                    } else {
                        e.append("private-key", try value.object(kind)?.string("privateKey") ?? "", secret: true)
                    }
                case "file":
                    let ref = try reference(raw, what: "file field '\(label)'", file: file, place: "\(place) ('\(name)')")
                    attachments.append((ref, "attached file"))
                default:
                    if let s = raw as? String {
                        e.append(label, s, secret: false)
                    } else {
                        warnings.append(InterchangeWarning(entry: name, "field '\(label)' of kind '\(kind)' was not imported"))
                    }
                }
            }
        }
        if let raw = details.dict["documentAttributes"], !(raw is NSNull) {
            let ref = try reference(raw, what: "documentAttributes", file: file, place: "\(place) ('\(name)')")
            attachments.insert((ref, "document"), at: 0)
        }
        let notes = try details.string("notesPlain") ?? ""
        e.append("notes", notes, secret: e.type == .note)
        if e.type == .note && notes.isEmpty { e.append("notes", "", secret: true, keepEmpty: true) }
        if e.type == .custom, let cat = categories[category] { e.append("category", cat, secret: false) }
        // Attachments last: their bytes from the archive, within the limits
        // of a field (16 MiB) and of an item (28 MiB in all).
        for (ref, what) in attachments {
            let shown = "\(what) '\(ref.fileName)'"
            func tooLarge(_ size: Int?) -> InterchangeWarning {
                InterchangeWarning(
                    entry: name,
                    "\(shown) was not imported: it is larger than the 16 MiB a field may hold\(size.map { " (\(Attachments.size($0)))" } ?? "") (keep it elsewhere)"
                )
            }
            if let size = ref.size, size > Field.maxValueBytes {
                warnings.append(tooLarge(size))
                continue
            }
            let member: Member
            do { member = try files.read(documentId: ref.documentId, fileName: ref.fileName) } catch {
                throw ImportError.bad(
                    file, "\(place) ('\(name)')", "\(shown): \(error.message)",
                    hint: "the archive is damaged: export it from 1Password again; nothing was imported")
            }
            switch member {
            case .missing:
                warnings.append(
                    InterchangeWarning(
                        entry: name,
                        "\(shown) was not imported: the archive holds no \(ref.member) (export again from 1Password with its files, or add it with `coffer attach`)"
                    ))
            case .tooLarge(let size):
                warnings.append(tooLarge(size))
            case .bytes(let bytes):
                let total = e.fields.reduce(0) { $0 + $1.bytes.count } + bytes.count
                guard total <= Field.maxItemBytes else {
                    warnings.append(
                        InterchangeWarning(
                            entry: name,
                            "\(shown) was not imported: the item's values would total \(Attachments.size(total)), more than the 28 MiB an item may hold"))
                    continue
                }
                e.appendAttachment(ref.fileName, bytes)
            }
        }
        var olds: [(Date?, String)] = []
        for h in try details.objects("passwordHistory") {
            if let p = try h.string("value") { olds.append((try h.int("time").map { Date(timeIntervalSince1970: TimeInterval($0)) }, p)) }
        }
        olds.sort { ($0.0 ?? .distantPast) < ($1.0 ?? .distantPast) }
        e.history = olds.map { (date, password) in
            var fields = e.fields.filter { $0.name != "password" }
            fields.append(Field(name: "password", value: password, isSecret: true))
            return InterchangeVersion(fields: fields, writtenAt: date)
        }
        return e
    }

    /// A document or file field's pointer into the archive's `files/`.
    struct Reference {
        var documentId: String
        var fileName: String
        /// `decryptedSize`, when given.
        var size: Int?
        /// Where 1Password puts the file: `files/<documentId>__<fileName>`.
        var member: String { "files/\(documentId)__\(fileName)" }
    }

    /// Parses `{fileName, documentId, decryptedSize}`; anything else is a
    /// malformed export, refused whole (exit 65) naming the item.
    static func reference(_ raw: Any, what: String, file: String, place: String) throws(CofferError) -> Reference {
        func bad(_ why: String) -> CofferError { ImportError.bad(file, place, "\(what): \(why)") }
        guard let dict = raw as? [String: Any] else { throw bad("expected an object with fileName and documentId") }
        guard let id = dict["documentId"] as? String, !id.isEmpty else { throw bad("no documentId") }
        guard !id.contains("/"), !id.contains("\\"), !id.contains(".."),
            !id.unicodeScalars.contains(where: { $0.properties.generalCategory == .control })
        else { throw bad("documentId '\(id)' is not a plain identifier") }
        guard let fileName = dict["fileName"] as? String, !fileName.isEmpty else { throw bad("no fileName") }
        guard !fileName.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) else {
            throw bad("the fileName holds control characters")
        }
        var size: Int?
        if let n = dict["decryptedSize"], !(n is NSNull) {
            guard let number = n as? NSNumber, String(cString: number.objCType) != "c", number.int64Value >= 0,
                number.doubleValue == Double(number.int64Value)
            else { throw bad("decryptedSize should be a whole number of bytes") }
            size = Int(clamping: number.int64Value)
        }
        return Reference(documentId: id, fileName: fileName, size: size)
    }
}
