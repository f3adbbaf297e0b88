import CofferCrypto
import CofferStore
import CofferSync
import CofferSystem
import Foundation

/// The last state of the vault file whose vault MAC was verified against
/// its rows (docs/key-hierarchy.md, "Integrity stamp"), so that `sync`,
/// `export` and `import` recompute the whole-vault MAC (a read of every
/// version, O(vault)) only when the file changed in a way coffer did not
/// follow.
///
/// A state is the file's device, inode, size and status-change time
/// (`st_ctime`, which an unprivileged process cannot set back), SQLite's
/// change counter and the stored vault MAC (``FileState``). It is recorded
/// after a full check, and carried forward by each coffer write that
/// started from a recorded state, read right after its commit when the
/// change counter shows that no other write came between. Any other
/// change to the file — `sqlite3`, a hex editor, another file copied or
/// renamed into its place, a write by a program that is not coffer —
/// gives a state that was never recorded, and the next check reads every
/// row as before.
///
/// Kept in memory for the life of this vault (a `sync` merging several
/// files, `clone DIR`), and, when the vault was unlocked through a shell
/// session, in the session's file `<session id>.verified` (mode 0600,
/// removed with the session), authenticated under the integrity-stamp
/// key:
/// ```
/// file = magic "CFVRFY01" || vault id (16) || u64be device || u64be inode
///        || i64be size || i64be ctime seconds || i64be ctime nanoseconds
///        || u32be change counter || vault MAC (32)
///        || BLAKE2b-256(key = integrity-stamp key, "coffer-integrity-stamp-v1" || everything before)
/// ```
/// A stamp file that is missing, not a private file of the user, of
/// another vault or another key, or altered, is ignored.
final class IntegrityStamp: @unchecked Sendable {
    static let magic = Array("CFVRFY01".utf8)
    static let label = Array("coffer-integrity-stamp-v1".utf8)
    static let suffix = ".verified"
    static let fileSize = 8 + 16 + 5 * 8 + 4 + 32 + 32

    /// The session's stamp file; nil when the vault was unlocked with
    /// its passphrase (the stamp then lives as long as this process).
    let path: String?
    private let lock = NSLock()
    private var verified: FileState?
    private var fullChecks = 0

    /// How many times this vault read every row to check its MAC (tests
    /// assert that a stamped state is not read again).
    var fullCheckCount: Int { lock.withLock { fullChecks } }
    func countFullCheck() { lock.withLock { fullChecks += 1 } }

    init(path: String?) { self.path = path }

    /// Whether `state` is the last verified state of the file, as this
    /// process or the session recorded it.
    func vouches(for state: FileState, vault: VaultID, key: SecretBytes) -> Bool {
        if lock.withLock({ verified == state }) { return true }
        guard let path, let stored = try? PrivateFile.read(path: path, maxSize: Self.fileSize),
            let loaded = Self.decode(stored.bytes, vault: vault, key: key), loaded == state
        else { return false }
        lock.withLock { verified = loaded }
        return true
    }

    /// Records `state` as verified, in memory and in the session's file
    /// (whose failure is ignored: the next check reads every row).
    func record(_ state: FileState, vault: VaultID, key: SecretBytes) {
        lock.withLock { verified = state }
        guard let path else { return }
        try? PrivateFile.replace(path: path, bytes: Self.encode(state, vault: vault, key: key))
    }

    static func encode(_ s: FileState, vault: VaultID, key: SecretBytes) -> [UInt8] {
        var w = ByteWriter(capacity: fileSize)
        w.bytes(magic)
        w.id(vault)
        w.u64(s.device)
        w.u64(s.inode)
        w.i64(s.size)
        w.i64(s.changedSeconds)
        w.i64(s.changedNanoseconds)
        w.u32(s.changeCounter)
        w.bytes(s.mac)
        let tag = KeyedHash.hash(label + w.data, key: key, length: 32)
        return w.data + tag
    }

    static func decode(_ bytes: [UInt8], vault: VaultID, key: SecretBytes) -> FileState? {
        guard bytes.count == fileSize, Array(bytes.prefix(magic.count)) == magic else { return nil }
        let body = Array(bytes.prefix(fileSize - 32))
        let tag = KeyedHash.hash(label + body, key: key, length: 32)
        guard VaultCore.constantTimeEqual(tag, Array(bytes.suffix(32))) else { return nil }
        var r = ByteReader(body)
        guard (try? r.bytes(magic.count)) != nil, let id = try? r.identifier(), id == vault,
            let device = try? r.u64(), let inode = try? r.u64(), let size = try? r.i64(), let seconds = try? r.i64(),
            let nanoseconds = try? r.i64(), let counter = try? r.u32(), let mac = try? r.bytes(VaultMAC.length)
        else { return nil }
        return FileState(
            device: device, inode: inode, size: size, changedSeconds: seconds, changedNanoseconds: nanoseconds, changeCounter: counter, mac: mac)
    }
}
