import CofferCrypto
import CofferStore
import CofferSync
import CofferSystem
import Foundation

/// Shell sessions (docs/sessions.md): after one unlock, commands get the
/// vault master key from a session file, decrypted with a key that exists
/// only in the session token (`COFFER_SESSION`). Neither the token nor the
/// file alone can unlock the vault.
///
/// Token: `cs1.<session id, 32 hex>.<secret, 43 base64url>`.
/// File `<dir>/<session id>.session` (mode 0600, folder 0700):
/// ```
/// magic "CFSESS01" | session id (16) | vault id (16) | createdAt ms (i64)
/// | idle timeout ms (i64) | expiresAt ms (i64) | vault path (u16 length + UTF-8)
/// | box = XChaCha20-Poly1305(master key, key = BLAKE2b-256(key = secret,
///         "coffer-session-v1" || session id), AD = every byte before the box)
/// ```
/// The file's modification time is the last use (refreshed on every use).
public enum Session {
    /// The environment variable that carries the token.
    public static let environmentVariable = "COFFER_SESSION"
    /// Default idle timeout: 15 minutes.
    public static let defaultIdleTimeout: Int64 = 15 * 60
    /// Default absolute lifetime: 8 hours.
    public static let defaultMaxLifetime: Int64 = 8 * 3600
    /// Longest lifetime accepted (30 days).
    public static let longestLifetime: Int64 = 30 * 86400

    static let magic = Array("CFSESS01".utf8)
    static let tokenPrefix = "cs1."
    static let keyLabel = Array("coffer-session-v1".utf8)
    static let suffix = ".session"

    /// What every unusable-session error says to do, in words.
    @available(*, deprecated, message: "read the error's remedy (CofferError.Remedy.Action.unlockAgain) instead")
    public static let unlockAgain = unlockAgainRemedy.text

    /// The remedy of every unusable-session error: unlock again.
    static let unlockAgainRemedy = CofferError.Remedy(.unlockAgain, "unlock the vault again")

    /// A session just created: the token to hand to the shell, and its facts.
    public struct Started: Sendable {
        /// The secret token. Print it only where the user asked for it.
        public let token: String
        public let info: SessionInfo
    }

    /// Starts a session for an unlocked vault. Other sessions are untouched.
    public static func start(
        vault: Vault, idleTimeout: Int64, maxLifetime: Int64, directory: SessionDirectory, now: Date = Date()
    ) throws(CofferError) -> Started {
        guard idleTimeout > 0, maxLifetime > 0, maxLifetime <= longestLifetime, idleTimeout <= longestLifetime else {
            throw CofferError(.usage, "session durations must be between 1s and 30d")
        }
        try directory.prepare()
        directory.sweep(now: now)
        let id = Random.bytes(16)
        let secret = SecretBytes.random(count: 32)
        let nowMs = millis(now)
        let header = SessionHeader(
            id: id, vaultID: vault.vaultID, createdAt: nowMs, idleTimeout: idleTimeout * 1000,
            expiresAt: nowMs + maxLifetime * 1000, vaultPath: vault.path)
        let ad = header.encoded
        let key = sessionKey(secret: secret, id: id)
        let box = AEAD.sealSecret(vault.masterKey, key: key, associatedData: ad)
        try directory.writeNew(name: Hex.encode(id) + suffix, bytes: ad + box)
        // A vault unlocked with a member identity keeps it in the session
        // (sealed under the token), so the session signs and adopts key
        // rotations as the identity file would (docs/sessions.md).
        if let identity = try vault.core.unlockedIdentity.load() {
            do { try SessionIdentity.write(identity, id: id, secret: secret, vaultID: vault.vaultID, directory: directory) } catch {
                directory.remove(name: Hex.encode(id) + suffix)
                throw error
            }
        }
        let token = tokenPrefix + Hex.encode(id) + "." + Base64URL.encode(secret.revealedBytes())
        return Started(token: token, info: header.info(lastUsed: nowMs))
    }

    /// Unlocks `file` with the session `token` (the hot path: no KDF, one
    /// small file read, one AEAD open). Refreshes the idle timer unless
    /// `refresh` is false.
    public static func unlock(
        file: VaultFile, token: String, directory: SessionDirectory, refresh: Bool = true, now: Date = Date()
    ) throws(CofferError) -> Vault {
        let (master, id, secret) = try openSession(file: file, token: token, directory: directory, refresh: refresh, now: now)
        let vault = try file.unlock(masterKey: master, listingCache: ListingCache(path: directory.path + "/" + Hex.encode(id) + ListingCache.suffix))
        let vaultID = file.header.vaultID
        vault.core.session.set(SessionLink(directory: directory, id: id, secret: secret))
        // Read only when a command needs the identity (never by `get`).
        vault.core.unlockedIdentity.setLoader { () throws(CofferError) -> MemberIdentity? in
            try SessionIdentity.read(id: id, secret: secret, vaultID: vaultID, directory: directory)
        }
        return vault
    }

    /// After a key adoption through the session `link` (by ``KeyRotation``,
    /// which ended every session of the vault): the same session again —
    /// same id, token, times and identity — holding `vault`'s new master
    /// key, so the shell's session keeps working. Returns false when it
    /// could not be written (the session then stays ended).
    static func carryOver(_ link: SessionLink, header: SessionHeader, identity: MemberIdentity?, to vault: Vault) -> Bool {
        let name = Hex.encode(link.id) + suffix
        let ad = header.encoded
        let box = AEAD.sealSecret(vault.masterKey, key: sessionKey(secret: link.secret, id: link.id), associatedData: ad)
        do {
            try link.directory.writeNew(name: name, bytes: ad + box)
            if let identity { try SessionIdentity.write(identity, id: link.id, secret: link.secret, vaultID: vault.vaultID, directory: link.directory) }
        } catch {
            link.directory.remove(name: name)
            return false
        }
        return true
    }

    /// The header of the session `link`, nil when it is gone or damaged.
    static func header(of link: SessionLink) -> SessionHeader? {
        guard let stored = try? link.directory.read(name: Hex.encode(link.id) + suffix) else { return nil }
        var r = ByteReader(stored.bytes)
        return try? SessionHeader(reading: &r)
    }

    /// The session's vault master key after every check.
    static func masterKey(
        file: VaultFile, token: String, directory: SessionDirectory, refresh: Bool, now: Date
    ) throws(CofferError) -> SecretBytes {
        try masterKeyAndID(file: file, token: token, directory: directory, refresh: refresh, now: now).master
    }

    /// The master key and the session id.
    static func masterKeyAndID(
        file: VaultFile, token: String, directory: SessionDirectory, refresh: Bool, now: Date
    ) throws(CofferError) -> (master: SecretBytes, id: [UInt8]) {
        let (master, id, _) = try openSession(file: file, token: token, directory: directory, refresh: refresh, now: now)
        return (master, id)
    }

    /// The master key, the session id and the token's secret.
    static func openSession(
        file: VaultFile, token: String, directory: SessionDirectory, refresh: Bool, now: Date
    ) throws(CofferError) -> (master: SecretBytes, id: [UInt8], secret: SecretBytes) {
        let parsed = try Token(parsing: token)
        let name = Hex.encode(parsed.id) + suffix
        guard let stored = try directory.read(name: name) else {
            throw unusable("session ended (locked, expired or removed)")
        }
        let header: SessionHeader
        let box: [UInt8]
        do {
            var reader = ByteReader(stored.bytes)
            header = try SessionHeader(reading: &reader)
            box = try reader.bytes(reader.remaining)
        } catch {
            directory.remove(name: name)
            throw unusable("session invalid (its file is damaged)")
        }
        guard header.id == parsed.id else { throw unusable("session invalid (the token does not match its file)") }
        let nowMs = millis(now)
        if let why = header.expiry(lastUsed: stored.modifiedMs, now: nowMs) {
            directory.remove(name: name)
            throw unusable(why)
        }
        let master: SecretBytes
        do {
            master = try AEAD.openSecret(box, key: sessionKey(secret: parsed.secret, id: parsed.id), associatedData: header.encoded)
        } catch {
            throw unusable("session invalid (the token or its file was altered)")
        }
        guard master.count == 32 else { throw unusable("session invalid (the token or its file was altered)") }
        guard header.vaultID == file.header.vaultID else {
            throw CofferError(
                .locked, "session belongs to another vault (\(header.vaultPath)), not \(file.path)",
                remedy: .init(.unlockAgain, "unlock \(file.path)", path: file.path))
        }
        if refresh { directory.touch(name: name) }
        return (master, parsed.id, parsed.secret)
    }

    /// What a token says about `file`, without refreshing it: the session
    /// facts, or why it cannot be used.
    public static func check(file: VaultFile, token: String, directory: SessionDirectory, now: Date = Date()) -> Result<SessionInfo, CofferError> {
        do {
            _ = try masterKey(file: file, token: token, directory: directory, refresh: false, now: now)
            let parsed = try Token(parsing: token)
            guard let info = directory.info(name: Hex.encode(parsed.id) + suffix) else {
                return .failure(unusable("session ended (locked, expired or removed)"))
            }
            return .success(info)
        } catch {
            return .failure(error)
        }
    }

    /// Ends the session of `token` and wipes its file. Returns false when
    /// there was no such session. The token need not be valid any more.
    @discardableResult
    public static func end(token: String, directory: SessionDirectory) throws(CofferError) -> Bool {
        let parsed = try Token(parsing: token)
        return directory.remove(name: Hex.encode(parsed.id) + suffix)
    }

    /// Ends every session of `vaultID`; returns how many files were wiped.
    @discardableResult
    public static func endAll(vaultID: VaultID, directory: SessionDirectory) -> Int {
        var n = 0
        for info in directory.sessions() where info.vaultID == vaultID {
            if directory.remove(name: info.id + suffix) { n += 1 }
        }
        return n
    }

    static func unusable(_ why: String) -> CofferError {
        CofferError(.locked, why, remedy: unlockAgainRemedy)
    }

    static func sessionKey(secret: SecretBytes, id: [UInt8]) -> SecretBytes {
        KeyedHash.deriveKey(from: secret, label: keyLabel + id)
    }

    static func millis(_ d: Date) -> Int64 { Int64((d.timeIntervalSince1970 * 1000).rounded(.down)) }

    /// A parsed token.
    struct Token {
        let id: [UInt8]
        let secret: SecretBytes

        init(parsing text: String) throws(CofferError) {
            // Plain byte work, no Foundation and no generic collection
            // algorithms: this runs on every command.
            var bytes = Array(text.utf8)
            // The token's bytes are a copy of its secret: wipe them when
            // parsing ends (the String it came from cannot be wiped; see
            // docs/threat-model.md, "Memory").
            defer { bytes.withUnsafeMutableBytes { if let p = $0.baseAddress { Sodium.memzero(p, $0.count) } } }
            while let last = bytes.last, last == 0x0A || last == 0x0D || last == 0x20 { bytes.removeLast() }
            // "cs1." + 32 hex + "." + 43 base64url
            guard bytes.count == 4 + 32 + 1 + 43, bytes[0] == 0x63, bytes[1] == 0x73, bytes[2] == 0x31, bytes[3] == 0x2E,
                bytes[36] == 0x2E, let id = Token.hex(bytes[4..<36]),
                var secret = Base64URL.decode(bytes[37...]), secret.count == 32
            else {
                throw Session.unusable("\(Session.environmentVariable) does not hold a Coffer session token")
            }
            self.id = id
            self.secret = SecretBytes(consuming: &secret)
        }

        static func hex(_ digits: ArraySlice<UInt8>) -> [UInt8]? {
            var out: [UInt8] = []
            out.reserveCapacity(digits.count / 2)
            var high: UInt8 = 0
            var odd = false
            for c in digits {
                let v: UInt8
                switch c {
                case 0x30...0x39: v = c - 0x30
                case 0x61...0x66: v = c - 0x61 + 10
                default: return nil
                }
                if odd { out.append(high << 4 | v) } else { high = v }
                odd.toggle()
            }
            return odd ? nil : out
        }
    }
}

/// Facts about one session (no secret).
public struct SessionInfo: Sendable, Equatable {
    /// Session id, 32 hex digits (the file name without `.session`).
    public var id: String
    public var vaultID: VaultID
    public var vaultPath: String
    public var createdAt: Date
    public var lastUsedAt: Date
    /// Idle timeout in seconds.
    public var idleTimeout: Int64
    /// End of the absolute lifetime.
    public var lifetimeEndsAt: Date
    /// When the session ends if it is not used again.
    public var expiresAt: Date { min(lastUsedAt.addingTimeInterval(Double(idleTimeout)), lifetimeEndsAt) }
}

/// The header of a session file (also the AEAD associated data).
struct SessionHeader {
    var id: [UInt8]
    var vaultID: VaultID
    var createdAt: Int64
    var idleTimeout: Int64
    var expiresAt: Int64
    var vaultPath: String

    init(id: [UInt8], vaultID: VaultID, createdAt: Int64, idleTimeout: Int64, expiresAt: Int64, vaultPath: String) {
        self.id = id
        self.vaultID = vaultID
        self.createdAt = createdAt
        self.idleTimeout = idleTimeout
        self.expiresAt = expiresAt
        self.vaultPath = vaultPath
    }

    init(reading r: inout ByteReader) throws(FormatError) {
        guard try r.bytes(8) == Session.magic else { throw FormatError.malformed("not a session file") }
        id = try r.bytes(16)
        guard let v = VaultID(bytes: try r.bytes(16)) else { throw FormatError.malformed("vault id") }
        vaultID = v
        createdAt = try r.i64()
        idleTimeout = try r.i64()
        expiresAt = try r.i64()
        guard let p = String(validating: try r.blob16(), as: UTF8.self) else { throw FormatError.malformed("vault path") }
        vaultPath = p
    }

    var encoded: [UInt8] {
        var w = ByteWriter(capacity: 96 + vaultPath.utf8.count)
        w.bytes(Session.magic)
        w.bytes(id)
        w.bytes(vaultID.bytes)
        w.i64(createdAt)
        w.i64(idleTimeout)
        w.i64(expiresAt)
        w.blob16(Array(vaultPath.utf8.prefix(Int(UInt16.max))))
        return w.data
    }

    /// Why the session is over at `now`, or nil while it is alive.
    func expiry(lastUsed: Int64, now: Int64) -> String? {
        if now >= expiresAt {
            return "session expired (maximum lifetime of \(SessionDuration.format((expiresAt - createdAt) / 1000)) reached)"
        }
        if now - lastUsed >= idleTimeout {
            return "session expired (unused for \(SessionDuration.format(idleTimeout / 1000)))"
        }
        return nil
    }

    func info(lastUsed: Int64) -> SessionInfo {
        SessionInfo(
            id: Hex.encode(id), vaultID: vaultID, vaultPath: vaultPath, createdAt: Clock.date(createdAt),
            lastUsedAt: Clock.date(lastUsed), idleTimeout: idleTimeout / 1000, lifetimeEndsAt: Clock.date(expiresAt))
    }
}

/// The folder that holds session files: `$XDG_RUNTIME_DIR/coffer`, or,
/// when that is unset, `${TMPDIR:-/tmp}/coffer-<uid>`. Either must be a
/// real folder owned by the user with no group or other access; files in
/// it are checked the same way before use.
public struct SessionDirectory: Sendable, Equatable {
    public let path: String
    static let maxFileSize = 70_000

    public init(path: String) { self.path = path }

    /// The folder for this user and environment (not created).
    public static func resolve() -> SessionDirectory {
        resolve(lookup: EnvironmentVariable.value)
    }

    /// The same, from the variables in `environment`.
    public static func resolve(environment: [String: String]) -> SessionDirectory {
        resolve(lookup: { environment[$0] })
    }

    static func resolve(lookup: (String) -> String?) -> SessionDirectory {
        if let r = lookup("XDG_RUNTIME_DIR"), r.hasPrefix("/"), PrivateFile.isDirectory(r) {
            return SessionDirectory(path: r + "/coffer")
        }
        var tmp = lookup("TMPDIR") ?? "/tmp"
        if !tmp.hasPrefix("/") { tmp = "/tmp" }
        return SessionDirectory(path: tmp + "/coffer-\(PrivateFile.userID)")
    }

    /// Every folder a session of this user may be in: the one
    /// ``resolve(environment:)`` picks, and the fallbacks used when
    /// `XDG_RUNTIME_DIR` or `TMPDIR` were different (a cron job, an ssh
    /// login without a runtime folder). `lock --all` ends sessions in each.
    public static func allCandidates(environment: [String: String] = ProcessInfo.processInfo.environment) -> [SessionDirectory] {
        var out = [resolve(environment: environment)]
        var paths: [String] = []
        if let r = environment["XDG_RUNTIME_DIR"], r.hasPrefix("/") { paths.append(r + "/coffer") }
        if let t = environment["TMPDIR"], t.hasPrefix("/") { paths.append(t + "/coffer-\(PrivateFile.userID)") }
        paths.append("/tmp/coffer-\(PrivateFile.userID)")
        for p in paths where !out.contains(where: { $0.path == p }) { out.append(SessionDirectory(path: p)) }
        return out
    }

    /// Creates the folder (0700) if missing and checks its owner and mode.
    func prepare() throws(CofferError) {
        do { try PrivateFile.makeDirectory(path) } catch {
            throw CofferError(.cannotCreate, "cannot create the session folder \(path): \(error)")
        }
        try checkFolder()
    }

    /// Fails unless the folder is a directory (not a link) owned by this
    /// user with no group or other permissions.
    func checkFolder() throws(CofferError) {
        switch PrivateFile.isPrivateDirectory(path) {
        case nil:
            throw Session.unusable("session ended (no session folder \(path))")
        case false?:
            throw CofferError(
                .locked,
                "the session folder \(path) is not a private folder of this user (owner you, mode 0700); sessions there are refused",
                hint: "remove it, or fix it with `chmod 700 \(path)` if it is yours")
        case true?:
            return
        }
    }

    var exists: Bool { PrivateFile.isPrivateDirectory(path) != nil }

    /// Creates `name` with `bytes`, mode 0600, refusing to replace anything.
    func writeNew(name: String, bytes: [UInt8]) throws(CofferError) {
        do { try PrivateFile.create(path: path + "/" + name, bytes: bytes) } catch {
            throw CofferError(.cannotCreate, "cannot create the session file \(path)/\(name): \(error)")
        }
    }

    /// A session file's bytes and modification time, nil when it is gone.
    /// Refuses links and files that are not private to this user.
    func read(name: String) throws(CofferError) -> (bytes: [UInt8], modifiedMs: Int64)? {
        try checkFolder()
        do {
            guard let r = try PrivateFile.read(path: path + "/" + name, maxSize: Self.maxFileSize) else { return nil }
            return (r.bytes, r.modifiedMillis)
        } catch .notPrivate {
            throw Session.unusable("session invalid (its file in \(path) is not a private file of this user)")
        } catch {
            throw Session.unusable("session invalid (cannot read its file: \(error))")
        }
    }

    /// Marks a session as used now (its file's modification time).
    func touch(name: String) { PrivateFile.touch(path: path + "/" + name) }

    /// Overwrites a session file with zeros and removes it.
    @discardableResult
    func remove(name: String) -> Bool {
        // A session's listing cache and integrity stamp end with it
        // (sealed under keys of the vault, but no use to anyone once the
        // session is over).
        if name.hasSuffix(Session.suffix) {
            for suffix in [ListingCache.suffix, ListingCache.deltaSuffix, IntegrityStamp.suffix, SessionIdentity.suffix] {
                PrivateFile.removeIfPresent(path: path + "/" + name.dropLast(Session.suffix.count) + suffix)
            }
        }
        return PrivateFile.wipeAndRemove(path: path + "/" + name, maxSize: Self.maxFileSize)
    }

    /// The facts of one session file, nil when unreadable.
    func info(name: String) -> SessionInfo? {
        guard let stored = try? read(name: name) else { return nil }
        var r = ByteReader(stored.bytes)
        guard let h = try? SessionHeader(reading: &r) else { return nil }
        return h.info(lastUsed: stored.modifiedMs)
    }

    /// Every readable session in the folder (any vault).
    public func sessions() -> [SessionInfo] {
        guard (try? checkFolder()) != nil, let names = try? FileManager.default.contentsOfDirectory(atPath: path) else { return [] }
        return names.filter { $0.hasSuffix(Session.suffix) }.sorted().compactMap { info(name: $0) }
    }

    /// Names ending in `.session` that are not regular files (a FIFO, a
    /// device, a link, a folder): never opened or removed, reported by
    /// `status`, `lock` and `unlock` so the user can remove them.
    public func irregularEntries() -> [String] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: path) else { return [] }
        return names.filter { $0.hasSuffix(Session.suffix) && PrivateFile.isIrregular(path + "/" + $0) }.sorted()
    }

    /// Wipes the files of sessions that are over (any vault).
    public func sweep(now: Date = Date()) {
        guard (try? checkFolder()) != nil, let names = try? FileManager.default.contentsOfDirectory(atPath: path) else { return }
        let nowMs = Session.millis(now)
        // Listing caches, integrity stamps and identities whose session file is gone.
        for suffix in [ListingCache.suffix, ListingCache.deltaSuffix, IntegrityStamp.suffix, SessionIdentity.suffix] {
            for name in names where name.hasSuffix(suffix) {
                let session = String(name.dropLast(suffix.count)) + Session.suffix
                if !names.contains(session) { PrivateFile.removeIfPresent(path: path + "/" + name) }
            }
        }
        for name in names where name.hasSuffix(Session.suffix) && !PrivateFile.isIrregular(path + "/" + name) {
            guard let stored = try? read(name: name) else { continue }
            var r = ByteReader(stored.bytes)
            if let h = try? SessionHeader(reading: &r) {
                if h.expiry(lastUsed: stored.modifiedMs, now: nowMs) != nil { remove(name: name) }
            } else if nowMs - stored.modifiedMs > 60_000 {
                // An unreadable file may be one another `coffer unlock` is
                // writing right now (created empty, then filled): leave
                // young ones alone, remove only old debris.
                remove(name: name)
            }
        }
    }
}

/// Base64 with the URL alphabet and no padding (RFC 4648 §5).
enum Base64URL {
    static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    static func encode(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var i = 0
        while i < bytes.count {
            let b0 = UInt32(bytes[i])
            let b1 = i + 1 < bytes.count ? UInt32(bytes[i + 1]) : 0
            let b2 = i + 2 < bytes.count ? UInt32(bytes[i + 2]) : 0
            let n = b0 << 16 | b1 << 8 | b2
            out.append(alphabet[Int(n >> 18 & 63)])
            out.append(alphabet[Int(n >> 12 & 63)])
            if i + 1 < bytes.count { out.append(alphabet[Int(n >> 6 & 63)]) }
            if i + 2 < bytes.count { out.append(alphabet[Int(n & 63)]) }
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    static func decode(_ text: String) -> [UInt8]? { decode(Array(text.utf8)[...]) }

    static func decode(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        var out: [UInt8] = []
        var acc: UInt32 = 0
        var bits = 0
        for c in text {
            let v: UInt8
            switch c {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): v = c - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): v = c - UInt8(ascii: "a") + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): v = c - UInt8(ascii: "0") + 52
            case UInt8(ascii: "-"): v = 62
            case UInt8(ascii: "_"): v = 63
            default: return nil
            }
            acc = acc << 6 | UInt32(v)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(acc >> UInt32(bits) & 0xff))
            }
        }
        // Leftover bits must be zero (canonical encoding only).
        guard bits < 6, acc & ((1 << UInt32(bits)) - 1) == 0 else { return nil }
        return out
    }
}
