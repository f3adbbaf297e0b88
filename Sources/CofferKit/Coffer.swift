import CofferCrypto
import CofferSystem
import Foundation

/// A Coffer vault, unlocked: what the Keychain is to an app on Apple's
/// systems, for a Swift program on Linux.
///
/// ```swift
/// import CofferKit
///
/// Coffer.hardenProcess()                          // optional, see below
/// let coffer = try await Coffer.open(.automatic)  // session, $COFFER_PASSPHRASE, or a prompt
/// try await coffer.set("sk-proj-…", for: "openai", kind: .apiKey)
/// try await coffer.set("hunter2", for: "work/github", kind: .login(username: "me", url: "https://github.com"))
/// let key = try await coffer.string(for: "openai")
/// for await change in coffer.changes { … }        // another process edited the vault
/// ```
///
/// Every call is `async`, throws only ``CofferError``, and does its
/// blocking work off Swift's cooperative pool: Argon2id and passphrase
/// prompts on a thread of their own, SQLite on the vault's serial queue.
/// A `Coffer` is `Sendable`; share one between tasks.
///
/// Items are ordinary vault items: `coffer ls`, `coffer get`, sync and
/// bundles see what an app stores, and the app sees what `coffer` writes.
/// ``vault`` gives the whole lower-level API (history, conflicts,
/// requirements manifests…).
///
/// ``lock()`` wipes the keys; a `Coffer` opened through the shell session
/// locks itself when that session ends (API/Locking.swift).
/// ``open(service:_:at:)`` keeps an app's items in a folder of its own
/// (API/Service.swift).
public final class Coffer: Sendable {
    /// The unlocked vault, for everything the front door does not cover.
    /// Its calls are synchronous and block the calling thread.
    public let vault: Vault
    let io: DispatchQueue
    private let claimed: Locked<Bool>
    /// The shell session this `Coffer` was opened with, watched for its
    /// end; nil when it was opened otherwise.
    let session: SessionLease?
    /// The service whose folder (`apps/SERVICE/`) the names given to this
    /// `Coffer` are relative to; nil: names are the vault's own.
    public let service: String?
    /// `apps/SERVICE/`, or "" without a service.
    let prefix: String

    /// Wraps a vault unlocked some other way.
    public convenience init(vault: Vault) {
        self.init(vault: vault, session: nil)
    }

    /// A `Coffer` over `vault`; `share` is another `Coffer` of the same
    /// vault whose queue and state this one shares (a service's view).
    init(vault: Vault, session: SessionLease?, service: String? = nil, prefix: String = "", sharing share: Coffer? = nil) {
        self.vault = vault
        self.io = share?.io ?? DispatchQueue(label: "coffer.vault.io")
        self.claimed = share?.claimed ?? Locked(false)
        self.session = session
        self.service = service
        self.prefix = prefix
    }

    /// The vault file's path.
    public var path: String { vault.path }

    // MARK: Process hardening

    /// Hardens the whole process for holding keys, once, as `coffer` does
    /// at start-up: core dumps off (`RLIMIT_CORE` = 0) and the process
    /// marked non-dumpable (`PR_SET_DUMPABLE` = 0), so no key reaches a core
    /// file and no other process of the user can read this one's memory
    /// through ptrace or `/proc/PID/mem`.
    ///
    /// CofferKit never does this by itself: it changes the whole process
    /// (a debugger can no longer attach; `/proc/PID` files become root's),
    /// so it is the application's decision. Call it early, before opening
    /// a vault. Returns whether both settings took effect.
    @discardableResult
    public static func hardenProcess() -> Bool {
        ProcessHardening.disableCoreDumps()
    }

    // MARK: Opening

    /// The vault path used when none is given: `$COFFER_VAULT`, else
    /// `$XDG_DATA_HOME/coffer/vault.coffer`, else
    /// `~/.local/share/coffer/vault.coffer`.
    public static var defaultPath: String { VaultLocation.resolve(explicit: nil) }

    /// Whether a file exists at `path` (default: ``defaultPath``).
    public static func exists(at path: String? = nil) -> Bool {
        FileManager.default.fileExists(atPath: VaultLocation.resolve(explicit: path))
    }

    /// Opens and unlocks the vault at `path` (default: ``defaultPath``) as
    /// `unlock` says (default: ``Unlock/automatic``, like the `coffer`
    /// command).
    /// - Throws: ``CofferError/Kind/vaultNotFound``,
    ///   ``CofferError/Kind/wrongPassphrase``, ``CofferError/Kind/locked``
    ///   (no session or passphrase available, or an unusable session),
    ///   ``CofferError/Kind/badData``, ``CofferError/Kind/busy``.
    public static func open(_ unlock: Unlock = .automatic, at path: String? = nil) async throws(CofferError) -> Coffer {
        let path = VaultLocation.resolve(explicit: path)
        let environment = ProcessInfo.processInfo.environment
        let opened = try await BlockingWork.onDedicatedThread("coffer.unlock") { () throws(CofferError) -> OpenedVault in
            let (vault, session) = try unlock.unlock(try VaultFile.open(path: path), environment: environment)
            return OpenedVault(vault: vault, session: session)
        }
        return Coffer(vault: opened.vault, session: opened.session)
    }

    struct OpenedVault: Sendable {
        var vault: Vault
        var session: SessionLease?
    }

    /// Opens and unlocks the vault at `path` with a passphrase the program
    /// holds. The bytes are copied into guarded memory, used and wiped;
    /// a `String` itself cannot be wiped, so prefer the `DataProtocol` or
    /// `SecretBytes` forms for a passphrase you can erase yourself.
    public static func open(at path: String? = nil, passphrase: String) async throws(CofferError) -> Coffer {
        try await open(at: path, passphrase: SecretBytes(copying: passphrase.utf8))
    }

    /// Opens and unlocks the vault at `path` with the passphrase bytes
    /// `passphrase` (UTF-8, as typed). They are copied into guarded memory
    /// before the call suspends, then wiped after use; wipe your own copy.
    public static func open(at path: String? = nil, passphrase: some DataProtocol) async throws(CofferError) -> Coffer {
        try await open(at: path, passphrase: SecretBytes(copying: passphrase))
    }

    /// Opens and unlocks the vault at `path` with a passphrase in guarded memory.
    public static func open(at path: String? = nil, passphrase: SecretBytes) async throws(CofferError) -> Coffer {
        let path = VaultLocation.resolve(explicit: path)
        let vault = try await BlockingWork.onDedicatedThread("coffer.unlock") { () throws(CofferError) -> Vault in
            try VaultFile.open(path: path).unlock(passphrase: passphrase)
        }
        return Coffer(vault: vault)
    }

    /// Creates a new, empty vault at `path` (default: ``defaultPath``),
    /// locked by `passphrase` through Argon2id with `kdf` (default:
    /// 256 MiB, 3 passes, 4 lanes; about a second), and returns it
    /// unlocked. The file is created 0600 in a folder created 0700.
    /// - Throws: ``CofferError/Kind/vaultExists`` when a file is already
    ///   there; ``CofferError/Kind/usage`` for an empty passphrase or KDF
    ///   parameters outside the accepted range; ``CofferError/Kind/cannotCreate``.
    public static func create(at path: String? = nil, passphrase: String, kdf: KDFParameters = .default) async throws(CofferError) -> Coffer {
        try await create(at: path, passphrase: SecretBytes(copying: passphrase.utf8), kdf: kdf)
    }

    /// ``create(at:passphrase:kdf:)`` with passphrase bytes (copied into
    /// guarded memory and wiped after use).
    public static func create(at path: String? = nil, passphrase: some DataProtocol, kdf: KDFParameters = .default) async throws(CofferError) -> Coffer {
        try await create(at: path, passphrase: SecretBytes(copying: passphrase), kdf: kdf)
    }

    /// ``create(at:passphrase:kdf:)`` with a passphrase in guarded memory.
    public static func create(at path: String? = nil, passphrase: SecretBytes, kdf: KDFParameters = .default) async throws(CofferError) -> Coffer {
        let path = VaultLocation.resolve(explicit: path)
        let vault = try await BlockingWork.onDedicatedThread("coffer.create") { () throws(CofferError) -> Vault in
            try VaultFile.create(path: path, passphrase: passphrase, kdf: kdf)
        }
        return Coffer(vault: vault)
    }

    // MARK: Running vault work

    /// Runs `body` on the vault's I/O queue, holding the keys (a
    /// ``lock()`` waits for it). Throws ``CofferError/Kind/locked`` instead
    /// once the vault is locked or the session it was opened with has
    /// ended (which locks it: API/Locking.swift).
    func run<T: Sendable>(_ body: @escaping @Sendable (Vault) throws(CofferError) -> T) async throws(CofferError) -> T {
        let vault = self.vault
        let session = self.session
        return try await BlockingWork.on(io) { () throws(CofferError) -> T in
            Coffer.lockIfSessionEnded(vault, session, isUse: true)
            return try vault.keys.use { () throws(CofferError) -> T in try body(vault) }
        }
    }

    /// Runs a write: the first one checks that this file still owns its
    /// replica id (a copied vault file takes a new one, docs/sync.md).
    func write<T: Sendable>(_ body: @escaping @Sendable (Vault) throws(CofferError) -> T) async throws(CofferError) -> T {
        let claimed = self.claimed
        return try await run { (vault) throws(CofferError) -> T in
            if !claimed.withLock({ $0 }) {
                _ = try vault.claimReplica()
                claimed.withLock { $0 = true }
            }
            return try body(vault)
        }
    }
}
