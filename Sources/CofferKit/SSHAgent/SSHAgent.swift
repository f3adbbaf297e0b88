import CofferCrypto
import CofferSystem
import Foundation

/// The SSH agent's logic (draft-ietf-sshm-ssh-agent), apart from its
/// socket (``SSHAgentServer``): one request message in, one reply out.
/// It serves the vault's `ssh-key` items (read fresh whenever the vault
/// file changed, none once the vault's session has ended) and keys added
/// by a client, held in memory (or stored in the vault with
/// ``Options/storeAdded``). Thread-safe: connections are served
/// concurrently and every request runs under one lock.
public final class SSHAgent: @unchecked Sendable {
    /// Message numbers of the protocol.
    public enum Message {
        public static let failure: UInt8 = 5
        public static let success: UInt8 = 6
        public static let requestIdentities: UInt8 = 11
        public static let identitiesAnswer: UInt8 = 12
        public static let signRequest: UInt8 = 13
        public static let signResponse: UInt8 = 14
        public static let addIdentity: UInt8 = 17
        public static let removeIdentity: UInt8 = 18
        public static let removeAllIdentities: UInt8 = 19
        public static let lock: UInt8 = 22
        public static let unlock: UInt8 = 23
        public static let addIdentityConstrained: UInt8 = 25
        public static let `extension`: UInt8 = 27
    }

    /// How the agent behaves beyond the protocol.
    public struct Options: Sendable {
        /// Serve only items whose name starts with this ("" for all).
        public var prefix: String
        /// Store keys added by clients as `ssh-key` items (under
        /// ``prefix``, or `ssh/` without one) instead of keeping them in
        /// memory only.
        public var storeAdded: Bool
        /// The environment the confirmation program (`SSH_ASKPASS`) runs in.
        public var environment: [String: String]

        public init(prefix: String = "", storeAdded: Bool = false, environment: [String: String] = ProcessInfo.processInfo.environment) {
            self.prefix = prefix
            self.storeAdded = storeAdded
            self.environment = environment
        }
    }

    /// What one connection told the agent: the host keys it bound the
    /// session to (`session-bind@openssh.com`).
    public struct ConnectionState: Sendable {
        public var boundHostKeys: [[UInt8]] = []
        public var forwarded = false
        public init() {}
    }

    /// A key added by a client, in memory.
    struct AddedKey {
        var key: SSHPrivateKey
        var confirm: Bool
        var expires: Date?
    }

    /// A key served now, with its options.
    struct Served {
        var key: SSHPrivateKey
        var confirm: Bool
        /// Host key fingerprints it may sign for; empty: any.
        var hosts: [String]

        /// Whether a connection in `state` may see this key listed: not
        /// when the connection is bound to a host the key is not for.
        func listed(in state: ConnectionState) -> Bool {
            guard !hosts.isEmpty, let bound = state.boundHostKeys.last else { return true }
            return hosts.contains(SSHPublicKey.fingerprint(bound))
        }

        /// Whether it may sign on a connection in `state`: a key restricted
        /// to hosts signs only on a connection bound (session-bind) to one
        /// of them, and not forwarded.
        func usable(in state: ConnectionState) -> Bool {
            guard !hosts.isEmpty else { return true }
            guard let bound = state.boundHostKeys.last, !state.forwarded else { return false }
            return hosts.contains(SSHPublicKey.fingerprint(bound))
        }
    }

    let source: SSHVaultKeySource
    let options: Options
    private let lock = NSLock()
    private var added: [AddedKey] = []
    private var lockPassphrase: SecretBytes?
    /// Called with one line (never a secret) for the agent's log.
    public var log: @Sendable (String) -> Void = { _ in }

    /// An agent serving `coffer`'s vault. Open it through the shell
    /// session (``Coffer/open(_:at:)`` with ``Coffer/Unlock/session``) for
    /// the agent to stop when the session ends.
    public init(coffer: Coffer, options: Options = Options()) {
        self.source = SSHVaultKeySource(coffer: coffer, prefix: options.prefix)
        self.options = options
    }

    // MARK: The keys served

    /// The keys listed now: the vault's, then those added, without
    /// duplicates; none while the agent or the vault is locked.
    func currentKeys() -> [Served] {
        guard lockPassphrase == nil, let vaultKeys = source.keys(log: log) else { return [] }
        let now = Date()
        added.removeAll { $0.expires.map { $0 <= now } ?? false }
        var out = vaultKeys.map { Served(key: $0.key, confirm: $0.confirm, hosts: $0.hosts) }
        for a in added where !out.contains(where: { $0.key.publicKeyBlob == a.key.publicKeyBlob }) {
            out.append(Served(key: a.key, confirm: a.confirm, hosts: []))
        }
        return out
    }

    // MARK: Requests

    /// The reply (type byte and contents, without the length) to one
    /// request message. Any malformed or unknown request is answered
    /// `SSH_AGENT_FAILURE`; nothing a client sends can stop the agent.
    public func handle(_ message: [UInt8], state: inout ConnectionState) -> [UInt8] {
        guard let type = message.first else { return [Message.failure] }
        var r = SSHReader(message, offset: 1)
        lock.lock()
        defer { lock.unlock() }
        do {
            switch type {
            case Message.requestIdentities:
                guard r.isAtEnd else { return [Message.failure] }
                var w = SSHWriter()
                w.byte(Message.identitiesAnswer)
                let keys = currentKeys().filter { $0.listed(in: state) }
                w.uint32(UInt32(keys.count))
                for k in keys {
                    w.string(k.key.publicKeyBlob)
                    w.string(k.key.comment)
                }
                return w.bytes
            case Message.signRequest:
                let blob = try r.string()
                let data = try r.string()
                let flags = try r.uint32()
                guard r.isAtEnd else { return [Message.failure] }
                return sign(blob: blob, data: data, flags: flags, state: state)
            case Message.addIdentity, Message.addIdentityConstrained:
                return try add(&r, constrained: type == Message.addIdentityConstrained)
            case Message.removeIdentity:
                let blob = try r.string()
                guard r.isAtEnd, lockPassphrase == nil else { return [Message.failure] }
                let before = added.count
                added.removeAll { $0.key.publicKeyBlob == blob }
                return [added.count < before ? Message.success : Message.failure]
            case Message.removeAllIdentities:
                guard r.isAtEnd, lockPassphrase == nil else { return [Message.failure] }
                added.removeAll()
                return [Message.success]
            case Message.lock:
                var pass = try r.string()
                defer { pass.wipe() }
                guard r.isAtEnd, lockPassphrase == nil else { return [Message.failure] }
                lockPassphrase = SecretBytes(consuming: &pass)
                log("locked by a client")
                return [Message.success]
            case Message.unlock:
                var pass = try r.string()
                guard r.isAtEnd, let held = lockPassphrase else {
                    pass.wipe()
                    return [Message.failure]
                }
                let given = SecretBytes(consuming: &pass)
                guard given.count == held.count, given.constantTimeEquals(held) else {
                    // As OpenSSH's agent: a wrong guess costs time.
                    usleep(100_000)
                    return [Message.failure]
                }
                lockPassphrase = nil
                log("unlocked by a client")
                return [Message.success]
            case Message.extension:
                let name = try r.text()
                if name == "session-bind@openssh.com" { return sessionBind(&r, state: &state) }
                return [Message.failure]
            default:
                return [Message.failure]
            }
        } catch {
            return [Message.failure]
        }
    }

    /// SIGN_REQUEST: the key must be listed now; a `confirm` key asks first.
    func sign(blob: [UInt8], data: [UInt8], flags: UInt32, state: ConnectionState) -> [UInt8] {
        guard let k = currentKeys().first(where: { $0.key.publicKeyBlob == blob }) else { return [Message.failure] }
        guard k.usable(in: state) else {
            log(
                "refused a signature with \(k.key.comment): it is for the hosts \(k.hosts.joined(separator: ", ")) only, and this connection is not bound to one"
            )
            return [Message.failure]
        }
        // A signature is a use of the session: it keeps it from idling out.
        guard source.stillUnlocked(use: true) else { return [Message.failure] }
        if k.confirm, !confirm(k.key) {
            log("refused a signature with \(k.key.comment): not confirmed")
            return [Message.failure]
        }
        do {
            let signature = try k.key.sign(data, flags: flags)
            var w = SSHWriter()
            w.byte(Message.signResponse)
            w.string(signature)
            return w.bytes
        } catch {
            log("cannot sign with \(k.key.comment): \(error)")
            return [Message.failure]
        }
    }

    /// ADD_IDENTITY and ADD_ID_CONSTRAINED.
    func add(_ r: inout SSHReader, constrained: Bool) throws -> [UInt8] {
        guard lockPassphrase == nil else { return [Message.failure] }
        let key: SSHPrivateKey
        do { key = try SSHPrivateKey.readPrivateFields(&r) } catch {
            log("refused a key from a client: \(error)")
            return [Message.failure]
        }
        var confirm = false
        var expires: Date?
        while constrained && !r.isAtEnd {
            switch try r.byte() {
            case 1: expires = Date().addingTimeInterval(TimeInterval(try r.uint32()))
            case 2: confirm = true
            default: return [Message.failure] // an extension or unknown constraint this agent cannot honour
            }
        }
        guard r.isAtEnd else { return [Message.failure] }
        if options.storeAdded {
            guard expires == nil else {
                log("refused to store a key with a lifetime in the vault")
                return [Message.failure]
            }
            do {
                let name = try source.store(key, confirm: confirm, prefix: options.prefix.isEmpty ? "ssh/" : options.prefix)
                log("stored \(key.fingerprint) as \(name)")
                return [Message.success]
            } catch {
                log("cannot store the added key: \(error.message)")
                return [Message.failure]
            }
        }
        added.removeAll { $0.key.publicKeyBlob == key.publicKeyBlob }
        added.append(AddedKey(key: key, confirm: confirm, expires: expires))
        log("holding \(key.fingerprint) (\(key.comment)) in memory")
        return [Message.success]
    }

    /// `session-bind@openssh.com`: the host key, the session id, the host's
    /// signature of it, and whether the connection is forwarded. A binding
    /// whose signature does not verify is refused.
    func sessionBind(_ r: inout SSHReader, state: inout ConnectionState) -> [UInt8] {
        guard let hostKey = try? r.string(), let sessionID = try? r.string(), let signature = try? r.string(), let forwarding = try? r.byte(),
            r.isAtEnd
        else { return [Message.failure] }
        guard SSHPublicKey.verify(signature: signature, of: sessionID, by: hostKey) else { return [Message.failure] }
        state.boundHostKeys.append(hostKey)
        if forwarding != 0 { state.forwarded = true }
        return [Message.success]
    }

    /// Asks through `SSH_ASKPASS` (OpenSSH's protocol: the program exits
    /// 0 to allow). No `SSH_ASKPASS`: refused.
    func confirm(_ key: SSHPrivateKey) -> Bool {
        guard let askpass = options.environment["SSH_ASKPASS"], !askpass.isEmpty else {
            log("a confirm key was asked to sign, and SSH_ASKPASS is not set: refused")
            return false
        }
        var env = options.environment
        env["SSH_ASKPASS_PROMPT"] = "confirm"
        let prompt = "Allow use of key \(key.comment)?\nKey fingerprint \(key.fingerprint)."
        do {
            let out = try ChildProcess.capture([askpass, prompt], environment: env.map { "\($0.key)=\($0.value)" })
            return out.termination.exitCode == 0
        } catch {
            log("cannot run SSH_ASKPASS: \(error)")
            return false
        }
    }
}

/// The vault's keys as the agent sees them: read again whenever the vault
/// file changed (a sync, an edit, another process's write), and none once
/// the vault is locked or the session it was opened with has ended.
final class SSHVaultKeySource: @unchecked Sendable {
    let coffer: Coffer
    let prefix: String
    private let watcher: ChangeWatcher
    private var cached: [SSHVaultKey]?
    private var reportedUnreadable: Set<String> = []

    init(coffer: Coffer, prefix: String) {
        self.coffer = coffer
        self.prefix = prefix
        watcher = ChangeWatcher(vault: coffer.vault, session: coffer.session)
        watcher.takeBaseline()
    }

    /// Whether the vault is still unlocked (its session has not ended);
    /// `use` refreshes the session's idle timer.
    func stillUnlocked(use: Bool) -> Bool {
        Coffer.lockIfSessionEnded(coffer.vault, coffer.session, isUse: use)
        return !coffer.vault.isLocked
    }

    /// The keys, or nil when the vault is locked. Called under the agent's lock.
    func keys(log: (String) -> Void) -> [SSHVaultKey]? {
        let change = watcher.lookUnlessLocked()
        if coffer.vault.isLocked || change?.locked == true {
            if cached != nil { log("the vault is locked (its session ended): no keys are served") }
            cached = nil
            return nil
        }
        if cached == nil || change != nil {
            do {
                let (keys, unreadable) = try coffer.vault.sshAgentKeys(prefix: prefix)
                for name in unreadable where !reportedUnreadable.contains(name) {
                    log("the key of '\(name)' cannot be read; it is not served")
                }
                reportedUnreadable = Set(unreadable)
                cached = keys
            } catch {
                log("cannot read the vault's keys: \(error.message)")
                return coffer.vault.isLocked ? nil : (cached ?? [])
            }
        }
        return cached
    }

    /// Stores a key added by a client as an item under `prefix`.
    func store(_ key: SSHPrivateKey, confirm: Bool, prefix: String) throws(CofferError) -> String {
        if let existing = cached?.first(where: { $0.key.publicKeyBlob == key.publicKeyBlob }) { return existing.itemName }
        let allowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._@-")
        var base = String(key.comment.map { allowed.contains($0) ? $0 : "-" }.prefix(64))
        if base.isEmpty || base.allSatisfy({ $0 == "-" || $0 == "." }) {
            base = String(key.fingerprint.dropFirst(7).map { allowed.contains($0) ? $0 : "-" }.prefix(16))
        }
        var name = prefix + base
        var n = 2
        while try coffer.vault.contains(name) {
            name = prefix + base + "-\(n)"
            n += 1
        }
        try coffer.vault.addSSHKey(key, name: name, confirm: confirm)
        cached = nil
        return name
    }
}
