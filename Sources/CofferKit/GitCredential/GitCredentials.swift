import CofferStore
import CofferSync
import Foundation

/// What git hands a credential helper on standard input
/// (git-credential(1), "INPUT/OUTPUT FORMAT"): `key=value` lines up to a
/// blank line or the end of input. `url=` is split into its parts as git
/// itself does; array keys (`capability[]`, `wwwauth[]`, `state[]`) and
/// keys this helper does not use are accepted and ignored.
public struct GitCredentialRequest: Sendable, Equatable {
    public var `protocol`: String?
    public var host: String?
    /// Without a leading '/'; present only when git sends it
    /// (`credential.useHttpPath`, or a url with a path).
    public var path: String?
    public var username: String?
    public var password: String?
    /// Keys given that this helper ignores (for diagnostics; never values).
    public var ignoredKeys: [String] = []

    public init(protocol: String? = nil, host: String? = nil, path: String? = nil, username: String? = nil, password: String? = nil) {
        self.protocol = `protocol`
        self.host = host
        self.path = path
        self.username = username
        self.password = password
    }

    /// The most input accepted (git sends a few hundred bytes).
    public static let maximumSize = 64 * 1024

    /// Parses helper input. A line without '=' or with an empty key, a NUL
    /// byte, input that is not UTF-8 or larger than ``maximumSize``, or an
    /// unparsable `url=`: ``CofferError/Kind/badData`` (65) naming the
    /// line, never its value.
    public static func parse(_ bytes: [UInt8]) throws(CofferError) -> GitCredentialRequest {
        guard bytes.count <= maximumSize else {
            throw CofferError(
                .badData, "git credential input is larger than \(maximumSize / 1024) KiB", hint: "git sends key=value lines; see git-credential(1)")
        }
        var r = GitCredentialRequest()
        var lineNumber = 0
        var start = 0
        while start < bytes.count {
            let end = bytes[start...].firstIndex(of: UInt8(ascii: "\n")) ?? bytes.count
            var line = bytes[start..<end]
            start = end + 1
            lineNumber += 1
            if line.last == UInt8(ascii: "\r") { line = line.dropLast() }
            if line.isEmpty { break } // a blank line ends the request
            guard !line.contains(0) else {
                throw CofferError(
                    .badData, "git credential input line \(lineNumber) contains a NUL byte", hint: "git sends key=value lines; see git-credential(1)")
            }
            guard let text = String(validating: line, as: UTF8.self) else {
                throw CofferError(.badData, "git credential input line \(lineNumber) is not valid UTF-8", hint: "coffer stores text; give the value in UTF-8")
            }
            guard let eq = text.firstIndex(of: "="), eq != text.startIndex else {
                throw CofferError(
                    .badData, "git credential input line \(lineNumber) is not key=value",
                    hint: "git sends key=value lines ending with a blank line; see git-credential(1)")
            }
            let key = String(text[..<eq])
            let value = String(text[text.index(after: eq)...])
            switch key {
            case "protocol": r.protocol = value
            case "host": r.host = value
            case "path": r.path = value
            case "username": r.username = value
            case "password": r.password = value
            case "url":
                guard let parts = GitCredentialRequest.parseURL(value) else {
                    throw CofferError(
                        .badData, "git credential input line \(lineNumber) has a url= that is not a URL",
                        hint: "give protocol=, host= and path= instead, or a URL such as https://example.com/repo.git")
                }
                r.protocol = parts.protocol
                r.host = parts.host
                if let p = parts.path { r.path = p }
                if let u = parts.username { r.username = u }
                if let p = parts.password { r.password = p }
            default:
                if !r.ignoredKeys.contains(key) { r.ignoredKeys.append(key) }
            }
        }
        if let p = r.path {
            let trimmed = p.trimmingSlashes()
            r.path = trimmed.isEmpty ? nil : trimmed
        }
        if let h = r.host { r.host = h.lowercased() }
        if let p = r.protocol { r.protocol = p.lowercased() }
        return r
    }

    /// Splits a URL into git's credential parts: protocol, host (with
    /// `:port`), path (no leading '/'), user and password. Nil when there
    /// is no scheme.
    public static func parseURL(_ text: String) -> (protocol: String, host: String?, path: String?, username: String?, password: String?)? {
        guard let c = URLComponents(string: text), let scheme = c.scheme, !scheme.isEmpty else { return nil }
        var host = c.host?.lowercased()
        if let port = c.port, let h = host { host = "\(h):\(port)" }
        let path = c.path.trimmingSlashes()
        return (scheme.lowercased(), host, path.isEmpty ? nil : path, c.user, c.password)
    }
}

/// A credential the vault holds for git.
public struct GitCredentialMatch: Sendable, Equatable {
    public var itemName: String
    public var username: String
    public var password: String
}

/// What `store` did.
public enum GitCredentialStoreResult: Sendable, Equatable {
    case created(String)
    case updated(String)
    case unchanged(String)
}

/// What `erase` did: items deleted, and matching items left alone because
/// they are not under `git/` (the user's own logins).
public struct GitCredentialEraseResult: Sendable, Equatable {
    public var deleted: [String]
    public var keptOutsideGit: [String]
}

/// Git credentials: the items git's credential helper protocol finds,
/// stores and erases (docs/git-credential.md). The façade's forwarders are
/// in GitCredential/Vault+GitCredentials.swift.
package struct GitCredentials: VaultComponent {
    package let core: VaultCore
}

extension GitCredentials {
    /// The protocols `item` serves to git: its `git-protocols` field when
    /// it has one, else its url's protocol, else `https`
    /// (docs/git-credential.md, "Protocols").
    static func gitProtocols(of item: Item, url: (protocol: String, host: String?, path: String?, username: String?, password: String?)?) -> Set<String> {
        if let listed = item.field(Vault.gitProtocolsField)?.value {
            return Set(listed.split(whereSeparator: { $0 == "," || $0 == " " || $0 == "\t" }).map { $0.lowercased() })
        }
        return [url?.protocol ?? "https"]
    }

    struct GitCandidate {
        var name: String
        var username: String?
        var password: String
        var updatedAt: Int64
        var underGit: Bool
        /// 2: the path matched exactly; 1: matched on host alone.
        var specificity: Int
    }

    /// Live items that hold a credential for the request's protocol, host,
    /// path (when given) and username (when given), best first. The
    /// password is not compared.
    func gitCandidates(_ r: GitCredentialRequest) throws(CofferError) -> [GitCandidate] {
        guard let host = r.host, !host.isEmpty else { return [] }
        return try CofferError.wrap {
            try store.read { db in
                let rows = try Queries.itemRows(db)
                let metadata = try Queries.versionsOfAllItems(db, registers: [.name, .type])
                var out: [GitCandidate] = []
                for row in rows {
                    let regs = metadata[row.id] ?? [:]
                    guard let nv = Register.shown(regs[.name] ?? []), !nv.isTombstone else { continue }
                    let name = try open(nv, item: row.id, register: .name).text
                    var type = ItemType.custom
                    if let tv = Register.shown(regs[.type] ?? []), !tv.isTombstone {
                        type = ItemType(rawValue: try open(tv, item: row.id, register: .type).text) ?? .custom
                    }
                    let underGit = name.hasPrefix(Vault.gitCredentialPrefix)
                    guard type == .login || underGit, !Vault.isReserved(name) else { continue }
                    // Through the item's authenticated record, as every read.
                    guard let loaded = try loadItem(db, id: row.id) else { continue }
                    let item = try decode(loaded.state, row: loaded.row)
                    guard let password = item.field("password")?.value, !password.isEmpty else { continue }
                    let username = item.field("username")?.value
                    if let want = r.username, want != (username ?? "") { continue }
                    // The protocol must be one the item serves, as git's own
                    // helpers match it exactly: an item kept for https is
                    // never sent over http unless it lists http on purpose.
                    let url = item.field("url").flatMap { GitCredentialRequest.parseURL($0.value) }
                    if let want = r.protocol, !GitCredentials.gitProtocols(of: item, url: url).contains(want) { continue }
                    var specificity = 0
                    if let u = url, u.host == host {
                        if let p = r.path {
                            if u.path == p { specificity = 2 }
                        } else {
                            specificity = u.path == nil ? 2 : 1
                        }
                    }
                    if specificity == 0, underGit, item.field("url") == nil {
                        // By name alone: git/HOST, git/USER@HOST, + /PATH.
                        let rest = String(name.dropFirst(Vault.gitCredentialPrefix.count))
                        for h in [host] + (username.map { ["\($0)@\(host)"] } ?? []) {
                            if let p = r.path {
                                if rest == h + "/" + p { specificity = 2 }
                            } else if rest == h {
                                specificity = 2
                            } else if rest.hasPrefix(h + "/") {
                                specificity = max(specificity, 1)
                            }
                        }
                    }
                    guard specificity > 0 else { continue }
                    out.append(
                        GitCandidate(
                            name: name, username: username, password: password, updatedAt: row.updatedAt, underGit: underGit,
                            specificity: specificity))
                }
                return out.sorted { a, b in
                    if a.specificity != b.specificity { return a.specificity > b.specificity }
                    if a.underGit != b.underGit { return a.underGit }
                    if a.updatedAt != b.updatedAt { return a.updatedAt > b.updatedAt }
                    return a.name < b.name
                }
            }
        }
    }

    package func gitCredential(for request: GitCredentialRequest) throws(CofferError) -> GitCredentialMatch? {
        guard let c = try gitCandidates(request).first else { return nil }
        return GitCredentialMatch(itemName: c.name, username: c.username ?? request.username ?? "", password: c.password)
    }

    package func storeGitCredential(_ r: GitCredentialRequest) throws(CofferError) -> GitCredentialStoreResult {
        guard let proto = r.protocol, let host = r.host, !host.isEmpty, let username = r.username, let password = r.password,
            !password.isEmpty
        else {
            throw CofferError(
                .badData, "git credential store needs protocol, host, username and password",
                hint: "git sends them after a successful login; see git-credential(1)")
        }
        if let existing = try gitCandidates(r).first(where: { $0.username == username }) {
            if existing.password == password { return .unchanged(existing.name) }
            var e = ItemEdit()
            e.setFields = [Field(name: "password", value: password, isSecret: true)]
            try items.edit(existing.name, e)
            return .updated(existing.name)
        }
        let suffix = r.path.map { "/" + $0 } ?? ""
        let url = "\(proto)://\(host)" + (r.path.map { "/" + $0 } ?? "")
        let draft = { (name: String) in
            ItemDraft(
                name: name, type: .login,
                fields: [
                    Field(name: "username", value: username, isSecret: false),
                    Field(name: "password", value: password, isSecret: true), Field(name: "url", value: url, isSecret: false),
                ], tags: ["git"])
        }
        var lastError: CofferError?
        for name in [Vault.gitCredentialPrefix + host + suffix, Vault.gitCredentialPrefix + username + "@" + host + suffix] {
            do {
                try items.add(draft(name))
                return .created(try Vault.normalizeName(name))
            } catch  where error.kind == .duplicateName {
                lastError = error
            }
        }
        throw lastError ?? CofferError(.duplicateName, "cannot name the git credential")
    }

    package func eraseGitCredential(_ r: GitCredentialRequest) throws(CofferError) -> GitCredentialEraseResult {
        var result = GitCredentialEraseResult(deleted: [], keptOutsideGit: [])
        for c in try gitCandidates(r) where r.password == nil || r.password == c.password {
            if !c.underGit {
                result.keptOutsideGit.append(c.name)
            } else if c.specificity == 2 {
                try items.delete(c.name)
                result.deleted.append(c.name)
            }
        }
        return result
    }
}

extension String {
    func trimmingSlashes() -> String {
        var s = Substring(self)
        while s.hasPrefix("/") { s = s.dropFirst() }
        while s.hasSuffix("/") { s = s.dropLast() }
        return String(s)
    }
}
