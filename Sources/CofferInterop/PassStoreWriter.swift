import CofferCrypto
import CofferKit
import CofferSystem
import Foundation

/// Writes items as a password-store (pass, gopass): one `NAME.gpg` per
/// item, encrypted by the user's own `gpg` to the store's recipients, the
/// plaintext written to gpg's standard input only — never to a file
/// (docs/import-export.md#pass-export).
public enum PassStoreWriter {
    public struct Result: Sendable {
        /// The entries written (item names), in order.
        public var written: [String] = []
        /// What could not be carried, named by item (never a value).
        public var warnings: [InterchangeWarning] = []
        /// The recipients of the store's top `.gpg-id`.
        public var recipients: [String] = []
    }

    /// The text of one entry, by pass's convention: the first line is the
    /// password (or the item's main secret), then `key: value` lines for
    /// the other one-line fields (`url` for every URL, as pass users write
    /// it), the `otpauth://` line of the `totp` field (as pass-otp reads
    /// it), then the notes. A field of several lines goes after the notes
    /// as a `name:` line and its lines. Attachments are left out.
    public static func text(of e: InterchangeEntry) -> (text: String, warnings: [String]) {
        var warnings: [String] = []
        let texts = e.fields.filter { !$0.isFile }
        let files = e.fields.filter(\.isFile).map { "'\($0.name)'" }
        if !files.isEmpty {
            let what = files.count == 1 ? "attachment \(files[0]) was" : "attachments \(files.joined(separator: ", ")) were"
            warnings.append("\(what) not exported: a pass entry holds text (encrypt the file into the store by hand: gpg -e … > NAME.gpg)")
        }
        // The first line: the type's main secret, else the first secret.
        var mainName = e.type.primaryFieldName ?? "value"
        if e.type == .note { mainName = "" }
        if !texts.contains(where: { $0.name == mainName }) && e.type != .note && e.type != .login {
            mainName = texts.first(where: { $0.isSecret && $0.name != "notes" && $0.name != "totp" })?.name ?? ""
        }
        var first = ""
        var lines: [String] = []
        var otp: [String] = []
        var multiLine: [Field] = []
        for f in texts where f.name != "notes" {
            if f.value.contains(where: \.isNewline) {
                multiLine.append(f)
                continue
            }
            if f.name == mainName {
                first = f.value
                continue
            }
            if f.name == "totp" {
                otp.append(otpauthLine(f.value, name: e.name))
                continue
            }
            let key = f.name.range(of: #"^url[0-9]*$"#, options: .regularExpression) != nil ? "url" : f.name
            lines.append("\(key): \(f.value)")
        }
        var out = [first] + lines + otp
        if let notes = texts.first(where: { $0.name == "notes" }), !notes.value.isEmpty {
            out.append(notes.value.hasSuffix("\n") ? String(notes.value.dropLast()) : notes.value)
        }
        for f in multiLine {
            out.append("\(f.name):")
            out.append(f.value.hasSuffix("\n") ? String(f.value.dropLast()) : f.value)
        }
        if !multiLine.isEmpty {
            let names = multiLine.map { "'\($0.name)'" }.joined(separator: ", ")
            warnings.append(
                "\(multiLine.count == 1 ? "field" : "fields") \(names) \(multiLine.count == 1 ? "has" : "have") several lines: written after the notes, under a '\(multiLine[0].name):' line (pass has no multi-line fields; coffer import --from pass reads them back as notes)"
            )
        }
        return (out.joined(separator: "\n") + "\n", warnings)
    }

    /// A `totp` value as the `otpauth://` line pass-otp reads: a URI as it
    /// is; a bare base32 secret wrapped in a URI labelled with the item.
    static func otpauthLine(_ value: String, name: String) -> String {
        let trimmed = value.trimmingCharacters(in: .whitespaces)
        if trimmed.lowercased().hasPrefix("otpauth://") { return trimmed }
        let allowed = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        let label = name.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
        let secret = trimmed.uppercased().filter { $0 != " " && $0 != "-" && $0 != "=" }
        return "otpauth://totp/\(label)?secret=\(secret)"
    }

    /// The recipients a `.gpg-id` file names: one per line, `#` comments
    /// and blank lines ignored (as pass 1.7 reads it).
    public static func recipients(inGpgID text: String) -> [String] {
        text.split(whereSeparator: \.isNewline).compactMap { line in
            let id = line.split(separator: "#", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? ""
            let t = id.trimmingCharacters(in: .whitespaces)
            return t.isEmpty ? nil : t
        }
    }

    /// Writes `entries` into the password store `folder`: a new or empty
    /// folder (then `gpgIDs` are its recipients, written to `.gpg-id`), or
    /// an existing store (its `.gpg-id` files say the recipients; an entry
    /// already there is refused). Every entry is encrypted before any is
    /// put in place: a gpg failure leaves the folder as it was.
    public static func write(
        _ all: [InterchangeEntry], to folder: String, gpgIDs: [String], gpg: String = "gpg", progress: ((Int, Int) -> Void)? = nil
    ) throws(CofferError) -> Result {
        let fm = FileManager.default
        // A name with a `.` or `..` part would be written outside its folder
        // (or outside the store): left out, named (pass refuses such names too).
        var skipped: [InterchangeWarning] = []
        var entries: [InterchangeEntry] = []
        for e in all {
            let parts = e.name.split(separator: "/", omittingEmptySubsequences: false)
            if parts.contains(where: { $0 == "." || $0 == ".." || $0.isEmpty }) {
                skipped.append(
                    InterchangeWarning(
                        entry: e.name, "not exported: a pass entry's name cannot have an empty, '.' or '..' part (rename the item with coffer mv)"))
                continue
            }
            if parts.contains(where: { $0.hasPrefix(".") }) {
                skipped.append(
                    InterchangeWarning(entry: e.name, "written, but a name part starting with '.' is hidden: pass ls and coffer import --from pass skip it"))
            }
            entries.append(e)
        }
        var isDir: ObjCBool = false
        let exists = fm.fileExists(atPath: folder, isDirectory: &isDir)
        if exists && !isDir.boolValue {
            throw CofferError(.cannotCreate, "\(folder) is a file, not a folder", hint: "give a new or empty folder, or an existing password store")
        }
        let gpgIDPath = folder + "/.gpg-id"
        let hasStore = fm.fileExists(atPath: gpgIDPath)
        if exists && !hasStore {
            let contents = (try? fm.contentsOfDirectory(atPath: folder)) ?? []
            if !contents.isEmpty {
                throw CofferError(
                    .cannotCreate, "\(folder) is not empty and is not a password store (it has no .gpg-id)",
                    hint: "give a new or empty folder, or an existing password store (made by pass init)")
            }
        }
        var result = Result()
        result.warnings = skipped
        for id in gpgIDs where id.isEmpty || id.contains(where: { $0.isNewline || $0 == "#" }) || id.trimmingCharacters(in: .whitespaces) != id {
            throw CofferError(.usage, "--gpg-id '\(id)' is not a key id, fingerprint or e-mail", hint: "e.g. --gpg-id you@example.org")
        }
        if hasStore {
            guard let text = try? String(contentsOfFile: gpgIDPath, encoding: .utf8) else {
                throw CofferError(.fileNotFound, "cannot read \(gpgIDPath)", hint: "check its permissions")
            }
            result.recipients = recipients(inGpgID: text)
            guard !result.recipients.isEmpty else {
                throw CofferError(.badData, "\(gpgIDPath) names no recipient", hint: "set the store's recipients with `pass init ID`")
            }
            if !gpgIDs.isEmpty && gpgIDs != result.recipients {
                throw CofferError(
                    .usage, "\(folder) is a password store for \(result.recipients.joined(separator: ", ")), not for \(gpgIDs.joined(separator: ", "))",
                    hint: "leave out --gpg-id to encrypt to the store's recipients, or change them first with `pass init`")
            }
        } else {
            guard !gpgIDs.isEmpty else {
                throw CofferError(
                    .usage, "\(folder) is not a password store yet: say whose key encrypts it",
                    hint: "add --gpg-id ID (your key's e-mail or fingerprint; repeat for several recipients)")
            }
            result.recipients = gpgIDs
        }
        // Entries already in the store are not replaced.
        let taken = entries.map(\.name).filter { fm.fileExists(atPath: folder + "/" + $0 + ".gpg") }
        if !taken.isEmpty {
            let shown = taken.prefix(5).joined(separator: ", ") + (taken.count > 5 ? ", …" : "")
            throw CofferError(
                .cannotCreate, "\(folder) already holds \(taken.count) of these entr\(taken.count == 1 ? "y" : "ies"): \(shown)",
                hint: "export into a new folder, or remove them first (pass rm NAME)")
        }
        // Staged in a hidden folder of the store (pass and gopass skip
        // hidden folders), then moved into place.
        if !exists {
            do { try fm.createDirectory(atPath: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700]) } catch {
                throw CofferError(
                    .cannotCreate, "cannot create the folder \(folder): \(error.localizedDescription)", hint: "check the path and its permissions")
            }
        }
        let staging = folder + "/.coffer-export-" + UUID().uuidString
        do { try fm.createDirectory(atPath: staging, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700]) } catch {
            throw CofferError(.cannotCreate, "cannot write into \(folder): \(error.localizedDescription)", hint: "check the folder's permissions")
        }
        defer { try? fm.removeItem(atPath: staging) }
        let cleanUpNewFolder = { if !exists { try? fm.removeItem(atPath: folder) } }
        let environment = ProcessInfo.processInfo.environment.map { "\($0.key)=\($0.value)" }
        var staged: [(from: String, to: String)] = []
        do throws(CofferError) {
            for (i, e) in entries.enumerated() {
                progress?(i, entries.count)
                let (text, warnings) = self.text(of: e)
                for w in warnings { result.warnings.append(InterchangeWarning(entry: e.name, w)) }
                let ids = hasStore ? try recipients(for: e.name, in: folder) : result.recipients
                let out = staging + "/\(i).gpg"
                try encrypt(text, to: ids, output: out, gpg: gpg, environment: environment, store: folder)
                staged.append((out, folder + "/" + e.name + ".gpg"))
            }
            progress?(entries.count, entries.count)
            if !hasStore {
                do { try AtomicFile.writeAtomically(Data((gpgIDs.joined(separator: "\n") + "\n").utf8), to: gpgIDPath) } catch {
                    throw CofferError(error)
                }
            }
        } catch {
            try? fm.removeItem(atPath: staging)
            cleanUpNewFolder()
            throw error
        }
        for (i, s) in staged.enumerated() {
            let parent = (s.to as NSString).deletingLastPathComponent
            do {
                try fm.createDirectory(atPath: parent, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
                guard rename(s.from, s.to) == 0 else { throw CofferError(.cannotCreate, "cannot write \(s.to): \(String(cString: strerror(errno)))") }
            } catch {
                throw CofferError(
                    .cannotCreate, "cannot write \(s.to): \(error.localizedDescription)",
                    hint: "\(i) of \(staged.count) entries were written; fix the folder and export into a new one")
            }
            result.written.append(entries[i].name)
        }
        return result
    }

    /// The recipients pass uses for entry `name`: the nearest `.gpg-id`
    /// from the entry's folder up to the store's top.
    static func recipients(for name: String, in folder: String) throws(CofferError) -> [String] {
        var parts = name.split(separator: "/").dropLast().map(String.init)
        while true {
            let path = ([folder] + parts + [".gpg-id"]).joined(separator: "/")
            if let text = try? String(contentsOfFile: path, encoding: .utf8) {
                let ids = recipients(inGpgID: text)
                guard !ids.isEmpty else { throw CofferError(.badData, "\(path) names no recipient", hint: "set them with `pass init ID`") }
                return ids
            }
            if parts.isEmpty { throw CofferError(.fileNotFound, "cannot read \(folder)/.gpg-id", hint: "check its permissions") }
            parts.removeLast()
        }
    }

    /// `gpg --encrypt` of `text` (on its standard input) to `ids`, into
    /// the file `output`, mode 0600.
    static func encrypt(_ text: String, to ids: [String], output: String, gpg: String, environment: [String], store: String) throws(CofferError) {
        var args = [gpg, "--batch", "--quiet", "--yes", "--compress-algo=none", "--no-encrypt-to", "--encrypt"]
        for id in ids { args += ["--recipient", id] }
        args += ["--output", output]
        var bytes = Array(text.utf8)
        let input = SecretBytes(consuming: &bytes)
        let result: CapturedOutput
        do {
            result = try ChildProcess.capture(args, environment: environment, input: input)
        } catch .notFound {
            throw CofferError(.unavailable, "--format pass needs gpg, which is not installed", hint: "install GnuPG (Debian: apt install gnupg)")
        } catch {
            throw CofferError(.internalError, "cannot start gpg: \(error)")
        }
        guard result.termination.exitCode == 0 else {
            let lines = String(decoding: result.stderr, as: UTF8.self).split(separator: "\n").map {
                $0.hasPrefix("gpg: ") ? String($0.dropFirst(5)) : String($0)
            }
            let said = lines.first { $0.contains("skipped") || $0.contains("unusable") } ?? lines.last ?? "exit status \(result.termination.status)"
            let missing = lines.contains { $0.contains("No public key") || $0.contains("No name") }
            throw CofferError(
                missing ? .fileNotFound : .badData, "gpg cannot encrypt to \(ids.joined(separator: ", ")): \(said)",
                hint: missing
                    ? "import the recipient's public key (gpg --import) or correct the id (--gpg-id, or \(store)/.gpg-id); nothing was written"
                    : "check that `gpg --encrypt --recipient ID` works for each recipient (a trusted, unexpired key); nothing was written")
        }
        chmod(output, 0o600)
    }
}
