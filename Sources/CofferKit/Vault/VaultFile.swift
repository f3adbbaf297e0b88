import CofferCrypto
import CofferStore
import CofferSync
import CofferSystem
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// Non-secret facts about a vault, readable without the passphrase.
public struct VaultInfo: Sendable, Equatable {
    public var path: String
    public var vaultID: VaultID
    public var replicaID: ReplicaID
    public var formatVersion: Int
    public var kdf: KDFParameters
    public var itemCount: Int
    public var createdAt: Date
    /// This replica's write counter (its last write's dot).
    public var counter: UInt64 = 0
    /// The newest counter of this replica id known to the vault: its own
    /// writes, or a higher one another replica's bundle claimed to have
    /// seen. Higher than ``counter`` means the file is older than what
    /// other replicas saw from it (restored or rolled back); the next write
    /// takes a new replica id (docs/threat-model.md).
    public var counterSeenElsewhere: UInt64 = 0
}

/// A vault file opened but not unlocked: its header can be read, nothing
/// else. ``unlock(passphrase:)`` gives a ``Vault``.
public final class VaultFile: Sendable {
    public let path: String
    let store: VaultStore
    /// The header as read at open time (or as this process last wrote it:
    /// the one-time re-wrap of a passphrase unlock replaces it).
    public var header: VaultHeader {
        headerLock.lock()
        defer { headerLock.unlock() }
        return _header
    }
    private nonisolated(unsafe) var _header: VaultHeader
    private let headerLock = NSLock()
    /// The key epoch as read at open time (docs/key-hierarchy.md
    /// §Master-key rotation): which `coffer rekey` made the master key.
    public let keyEpoch: KeyEpoch
    /// The stored key check of ``keyEpoch`` (nil at epoch 0).
    let keyCheck: [UInt8]?

    init(path: String, store: VaultStore, header: VaultHeader, keyEpoch: KeyEpoch = .initial, keyCheck: [UInt8]? = nil) {
        self.path = path
        self.store = store
        self._header = header
        self.keyEpoch = keyEpoch
        self.keyCheck = keyCheck
    }

    /// The KDF parameters stored in the vault.
    public var kdf: KDFParameters {
        KDFParameters(memoryKiB: header.kdfMemoryKiB, iterations: header.kdfIterations, parallelism: header.kdfParallelism)
    }

    /// Opens the vault at `path` without unlocking it. A vault that holds
    /// a trigger (planted with sqlite3: coffer never creates one) is
    /// refused as modified outside coffer, unless `forVerifying` — for
    /// ``Vault/verify()``, which only reads and names it.
    public static func open(path: String, forVerifying: Bool = false) throws(CofferError) -> VaultFile {
        try CofferError.wrap {
            let store = try VaultStore.open(path: path, allowingTriggers: forVerifying)
            let (header, epoch) = try store.readDirect { db in (try Queries.header(db), try Queries.keyEpoch(db)) }
            WriteMark.sweep(vault: path)
            return VaultFile(path: path, store: store, header: header, keyEpoch: epoch.epoch, keyCheck: epoch.check)
        }
    }

    /// Creates a vault: new vault id, new replica id, a random master key
    /// wrapped under `passphrase`. The file is created 0600 in a 0700
    /// folder, under a temporary name linked into place when complete; on
    /// any failure (or a kill) no file is left at `path`.
    public static func create(path: String, passphrase: SecretBytes, kdf: KDFParameters = .default) throws(CofferError) -> Vault {
        do { try kdf.validate() } catch { throw CofferError(.usage, "invalid KDF parameters: \(error)") }
        guard passphrase.count > 0 else {
            throw CofferError(.usage, "the passphrase is empty", hint: "choose a passphrase of several words")
        }
        guard passphrase.nfcNormalizedUTF8() != nil else {
            throw CofferError(.usage, "the passphrase is not valid UTF-8 text", hint: "type it in a UTF-8 terminal, or save the passphrase file as UTF-8")
        }
        sweepStaleTemporaries(forVaultAt: path)
        if FileManager.default.fileExists(atPath: path) {
            throw CofferError(
                .vaultExists, "a file already exists at \(path)", remedy: .init(.useExistingVault, "use it as it is, or choose another path", path: path))
        }
        let vaultID = VaultID.random()
        let master = SecretBytes.random(count: 32)
        let wrapped: (salt: [UInt8], wrapped: [UInt8])
        do {
            wrapped = try KeyHierarchy.wrapMasterKey(master, passphrase: passphrase, vault: vaultID, kdf: kdf)
        } catch {
            throw CofferError(.usage, "cannot derive a key with these KDF parameters: \(error)")
        }
        let header = VaultHeader(
            formatVersion: VaultStore.formatVersion, vaultID: vaultID, kdfMemoryKiB: kdf.memoryKiB,
            kdfIterations: kdf.iterations, kdfParallelism: kdf.parallelism, kdfSalt: wrapped.salt,
            wrappedMasterKey: wrapped.wrapped, createdAt: Clock.nowMillis())
        // Built under a temporary name and linked into place when
        // complete: a killed `init` leaves no half-made vault (issue 13).
        try NewVaultFile.build(at: path, kind: "init") { (temp: String) throws(CofferError) in
            try CofferError.wrap {
                _ = try VaultStore.create(
                    path: temp, header: header, replica: .random(), host: MachineIdentity.host,
                    mac: VaultMAC(key: KeyHierarchy.subKey(.vaultMAC, of: master)))
            }
        }
        return try CofferError.wrap {
            let store = try VaultStore.open(path: path)
            return try Vault(file: VaultFile(path: path, store: store, header: header), master: master)
        }
    }

    /// Removes what `init`s and `clone`s of `path` killed part-way left
    /// beside it (unlocked, older than five minutes; docs/reliability.md).
    /// `init` and `clone` do it themselves; returns the names removed.
    @discardableResult
    public static func sweepStaleTemporaries(forVaultAt path: String) -> [String] {
        NewVaultFile.sweepStale(for: path)
    }

    /// Replaces the header this object holds after this process rewrote it.
    func replaceHeader(_ new: VaultHeader) {
        headerLock.lock()
        defer { headerLock.unlock() }
        _header = new
    }

    /// Unlocks with the passphrase (runs Argon2id).
    /// Does not harden the process: see ``Coffer/hardenProcess()``.
    ///
    /// The master key's wrapping says whether the vault has had integrity
    /// data (`coffer-wrap-v3`, vault format 7; docs/key-hierarchy.md,
    /// "Wrapping the master key"): a file whose key opens under that
    /// binding but whose header claims an older format, or that has lost
    /// its integrity data, was set back by hand and is refused (exit 65);
    /// so is a format-7 file whose key opens only under the legacy binding
    /// (its wrapped key replaced by an older one). A genuine older vault
    /// (legacy wrapping, older format) is upgraded, once: its integrity
    /// data brought up to date, then its key wrapped again with
    /// `coffer-wrap-v3` under the same passphrase and salt.
    public func unlock(passphrase: SecretBytes) throws(CofferError) -> Vault {
        let header = self.header
        let unwrapped: KeyHierarchy.Unwrapped
        do {
            unwrapped = try KeyHierarchy.unwrapMasterKey(
                passphrase: passphrase, vault: header.vaultID, kdf: kdf, salt: header.kdfSalt,
                wrapped: header.wrappedMasterKey, epoch: keyEpoch,
                bindings: header.wrapBinding == .integrity ? [.integrity, .legacy] : [.legacy, .integrity])
        } catch .authenticationFailed {
            throw CofferError(.wrongPassphrase, "wrong passphrase for \(path)", hint: "try again; the passphrase is case-sensitive")
        } catch {
            throw CofferError(.badData, "cannot unlock \(path): \(error)")
        }
        switch (unwrapped.binding, header.wrapBinding) {
        case (.integrity, .legacy):
            throw CofferError(
                .badData,
                "vault file was modified outside coffer: \(path) says vault format \(header.formatVersion), but its master key was wrapped by format \(VaultStore.boundWrapFormat) or later (its format number was set back or its integrity data removed)",
                remedy: Self.restore)
        case (.legacy, .integrity):
            throw CofferError(
                .badData,
                "vault file was modified outside coffer: the wrapped master key of \(path) is one from before vault format \(VaultStore.boundWrapFormat) (taken from an older copy of the file or an old bundle)",
                remedy: Self.restore)
        case (.integrity, .integrity):
            return try CofferError.wrap { try Vault(file: self, master: unwrapped.master) }
        case (.legacy, .legacy):
            return try CofferError.wrap {
                let vault = try Vault(file: self, master: unwrapped.master, rebuildIntegrity: true)
                try vault.core.bindWrapping(unwrapped)
                replaceHeader(try store.read { db in try Queries.header(db) })
                return vault
            }
        }
    }

    static let restore = CofferError.Remedy(.restoreVault, "restore the vault from a backup, or clone it again from another machine's bundle")

    /// Unlocks with a master key obtained elsewhere (a shell session). The
    /// caller is responsible for having checked that it belongs to this
    /// vault. A key of an older key epoch (a session unlocked before a
    /// `coffer rekey`) is refused with ``CofferError/Kind/locked``.
    public func unlock(masterKey: SecretBytes) throws(CofferError) -> Vault {
        try checkEpoch(of: masterKey)
        return try CofferError.wrap { try Vault(file: self, master: masterKey) }
    }

    /// Unlocks for a shell session, whose listing cache the vault uses.
    /// The key epoch is checked as by ``unlock(masterKey:)``.
    func unlock(masterKey: SecretBytes, listingCache: ListingCache) throws(CofferError) -> Vault {
        try checkEpoch(of: masterKey)
        return try CofferError.wrap { try Vault(file: self, master: masterKey, listingCache: listingCache) }
    }

    /// Refuses a master key of an older key epoch than the vault's.
    private func checkEpoch(of masterKey: SecretBytes) throws(CofferError) {
        if let keyCheck, !VaultCore.constantTimeEqual(KeyHierarchy.keyCheck(master: masterKey, vault: header.vaultID, epoch: keyEpoch), keyCheck) {
            throw CofferError(
                .locked,
                "session ended: the master key of \(path) was rotated (key epoch \(keyEpoch.number)) after it was unlocked",
                remedy: Session.unlockAgainRemedy)
        }
    }

    /// Facts about the vault that need no passphrase.
    public func info() throws(CofferError) -> VaultInfo {
        try CofferError.wrap {
            try store.read { db in
                let local = try Queries.localReplica(db)
                return VaultInfo(
                    path: path, vaultID: header.vaultID, replicaID: local.id, formatVersion: header.formatVersion,
                    kdf: kdf, itemCount: try Queries.itemCount(db),
                    createdAt: Date(timeIntervalSince1970: Double(header.createdAt) / 1000),
                    counter: local.counter, counterSeenElsewhere: try Queries.summary(db)[local.id])
            }
        }
    }
}

/// Wall-clock helpers (milliseconds since 1970).
package enum Clock {
    /// Added to the system clock, for the task that sets it (tests of a
    /// machine whose clock runs fast or slow: `Clock.$offsetMillis.withValue`).
    /// Always 0 in coffer itself.
    @TaskLocal package static var offsetMillis: Int64 = 0

    package static func nowMillis() -> Int64 { Int64((Date().timeIntervalSince1970 * 1000).rounded()) &+ offsetMillis }
    static func date(_ ms: Int64) -> Date { Date(timeIntervalSince1970: Double(ms) / 1000) }
}

/// Identifies the machine a replica id was issued on.
enum MachineIdentity {
    /// `/etc/machine-id` when readable, else the host name.
    /// Read with plain POSIX calls and trimmed byte by byte: every write
    /// asks for it, and Foundation's file and trimming APIs cost an `add`
    /// 3 % (runtime type look-ups) for a 33-byte file.
    static let host: String? = {
        let fd = Glibc.open("/etc/machine-id", O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        if fd >= 0 {
            var buffer = [UInt8](repeating: 0, count: 256)
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
            Glibc.close(fd)
            if n > 0 {
                // Index arithmetic, not drop/reversed: those build nested
                // generic types the runtime instantiates on first use.
                func isSpace(_ b: UInt8) -> Bool { b == 0x20 || b == 0x09 || b == 0x0A || b == 0x0D }
                var lo = 0
                var hi = n
                while lo < hi && isSpace(buffer[lo]) { lo += 1 }
                while hi > lo && isSpace(buffer[hi - 1]) { hi -= 1 }
                if lo < hi {
                    return buffer.withUnsafeBufferPointer { String(decoding: UnsafeBufferPointer(rebasing: $0[lo..<hi]), as: UTF8.self) }
                }
            }
        }
        return ProcessInfo.processInfo.hostName
    }()
}

/// Where the vault lives when no path is given.
public enum VaultLocation {
    /// `explicit` (from `--vault`), else `$COFFER_VAULT`, else
    /// `$XDG_DATA_HOME/coffer/vault.coffer`, else
    /// `~/.local/share/coffer/vault.coffer`.
    public static func resolve(explicit: String?) -> String {
        resolve(explicit: explicit, lookup: EnvironmentVariable.value)
    }

    /// The same, from the variables in `environment`.
    public static func resolve(explicit: String?, environment: [String: String]) -> String {
        resolve(explicit: explicit, lookup: { environment[$0] })
    }

    static func resolve(explicit: String?, lookup: (String) -> String?) -> String {
        if let p = explicit, !p.isEmpty { return absolute(p) }
        if let p = lookup("COFFER_VAULT"), !p.isEmpty { return absolute(p) }
        if let d = lookup("XDG_DATA_HOME"), d.hasPrefix("/") { return d + "/coffer/vault.coffer" }
        let home = lookup("HOME") ?? NSHomeDirectory()
        return home + "/.local/share/coffer/vault.coffer"
    }

    /// Whether something (a vault or any other file, even a dangling
    /// link) already occupies `path`.
    public static func exists(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0
    }

    static func absolute(_ p: String) -> String {
        if p.hasPrefix("/") { return p }
        return FileManager.default.currentDirectoryPath + "/" + p
    }
}
