import CofferKit
import CofferSystem
import Foundation

/// A password-store folder (pass, gopass): every `*.gpg` file decrypted by
/// the user's own `gpg` as a child process (never a shell; gpg-agent asks
/// for the key's passphrase as usual), its output kept in memory only
/// (docs/import-export.md#pass).
public enum PassStore {
    /// `$PASSWORD_STORE_DIR`, else `~/.password-store`.
    public static var defaultFolder: String {
        let env = ProcessInfo.processInfo.environment
        if let d = env["PASSWORD_STORE_DIR"], !d.isEmpty { return d }
        return (env["HOME"] ?? NSHomeDirectory()) + "/.password-store"
    }

    /// The store's entries: paths relative to `folder` without `.gpg`,
    /// sorted; hidden folders (`.git`, `.extensions`) are skipped.
    public static func entryPaths(in folder: String) throws(CofferError) -> [String] {
        var isDir: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isDir) else {
            throw CofferError(.fileNotFound, "no password store at \(folder)", hint: "give the store's folder, or set PASSWORD_STORE_DIR")
        }
        guard isDir.boolValue else { throw CofferError(.usage, "\(folder) is not a folder", hint: "--from pass takes the password store's folder") }
        guard let walker = FileManager.default.enumerator(atPath: folder) else {
            throw CofferError(.fileNotFound, "cannot read the folder \(folder)", hint: "check its permissions")
        }
        var out: [String] = []
        while let next = walker.nextObject() as? String {
            let last = (next as NSString).lastPathComponent
            if last.hasPrefix(".") {
                if walker.fileAttributes?[.type] as? FileAttributeType == .typeDirectory { walker.skipDescendants() }
                continue
            }
            if next.hasSuffix(".gpg") { out.append(String(next.dropLast(4))) }
        }
        return out.sorted()
    }

    /// Splits a decrypted pass file by pass's convention: the first line is
    /// the password; `otpauth://` lines become `totp`; `key: value` lines
    /// become fields (`login`, `user`, `username` → username; `url`,
    /// `website` → url); every other line goes to `notes`.
    public static func entry(name: String, text: String, origin: String) -> InterchangeEntry {
        var e = InterchangeEntry(name: name, type: .login, origin: origin)
        var lines = text.split(separator: "\n", omittingEmptySubsequences: false).map { $0.hasSuffix("\r") ? String($0.dropLast()) : String($0) }
        if lines.last == "" { lines.removeLast() }
        let password = lines.first ?? ""
        e.append("password", password, secret: true)
        var notes: [String] = []
        for line in lines.dropFirst() {
            let trimmed = line.trimmingCharacters(in: .whitespaces)
            if trimmed.hasPrefix("otpauth://") && e.field("totp") == nil {
                e.append("totp", trimmed, secret: true)
                continue
            }
            if let (k, v) = keyValue(line) {
                let lower = k.lowercased()
                let field: String
                switch lower {
                case "login", "user", "username": field = "username"
                case "url", "website", "site": field = "url"
                default: field = k
                }
                let secret = field == "username" || field == "url" ? false : ItemType.login.defaultSecrecy(of: field)
                if e.field(field) == nil || field == "url" {
                    e.append(field, v, secret: secret, keepEmpty: true)
                    continue
                }
            }
            notes.append(line)
        }
        while notes.last?.isEmpty == true { notes.removeLast() }
        e.append("notes", notes.joined(separator: "\n"), secret: false)
        if password.isEmpty && e.fields.allSatisfy({ $0.name == "notes" }) && !notes.isEmpty {
            e.type = .note
            e.fields = [Field(name: "notes", value: notes.joined(separator: "\n"), isSecret: true)]
        }
        return e
    }

    /// `key: value` with a key of letters, digits, space, `_`, `-`, `.`.
    static func keyValue(_ line: String) -> (String, String)? {
        guard let colon = line.firstIndex(of: ":") else { return nil }
        let key = line[..<colon]
        guard let first = key.first, first != " ", key.last != " ", key.count <= 64,
            key.allSatisfy({ $0.isLetter || $0.isNumber || $0 == " " || $0 == "_" || $0 == "-" || $0 == "." })
        else { return nil }
        let rest = line[line.index(after: colon)...]
        guard rest.isEmpty || rest.hasPrefix(" ") || rest.hasPrefix("\t") else { return nil }
        return (String(key), rest.trimmingCharacters(in: .whitespaces))
    }

    /// Decrypts every entry with `gpg` and reads it. `progress` is called
    /// with (done, total).
    public static func read(folder: String, gpg: String = "gpg", progress: ((Int, Int) -> Void)? = nil) throws(CofferError) -> ImportedFile {
        let paths = try entryPaths(in: folder)
        var out = ImportedFile()
        let environment = ProcessInfo.processInfo.environment.map { "\($0.key)=\($0.value)" }
        for (i, name) in paths.enumerated() {
            progress?(i, paths.count)
            let file = folder + "/" + name + ".gpg"
            let result: CapturedOutput
            do {
                result = try ChildProcess.capture([gpg, "--quiet", "--yes", "--decrypt", "--", file], environment: environment)
            } catch .notFound {
                throw CofferError(.fileNotFound, "--from pass needs gpg, which is not installed", hint: "install GnuPG (Debian: apt install gnupg)")
            } catch {
                throw CofferError(.internalError, "cannot start gpg: \(error)")
            }
            guard result.termination.exitCode == 0 else {
                let said =
                    String(decoding: result.stderr, as: UTF8.self).split(separator: "\n").last.map(String.init) ?? "exit status \(result.termination.status)"
                throw CofferError(
                    .badData, "cannot decrypt \(file): gpg: \(said.hasPrefix("gpg: ") ? String(said.dropFirst(5)) : said)",
                    hint: "check that `gpg --decrypt \(file)` works (the secret key and its agent); nothing was imported")
            }
            guard let text = String(validating: result.stdout, as: UTF8.self) else {
                // A binary entry (a key file, an image put in with gpg or
                // `pass insert -m < FILE`): one attachment named like the entry.
                guard result.stdout.count <= Field.maxValueBytes else {
                    out.warnings.append(
                        InterchangeWarning(
                            entry: name,
                            "it holds \(Attachments.size(result.stdout.count)) of binary data, more than the 16 MiB a field may hold; it was not imported"))
                    continue
                }
                var e = InterchangeEntry(name: name, type: .custom, origin: "\(file) ('\(name)')")
                e.appendAttachment(name.split(separator: "/").last.map(String.init) ?? name, result.stdout)
                out.entries.append(e)
                continue
            }
            out.entries.append(entry(name: name, text: text, origin: "\(file) ('\(name)')"))
        }
        progress?(paths.count, paths.count)
        return out
    }
}
