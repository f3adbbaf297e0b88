import CofferCrypto
import CofferStore
import CofferSync
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// A sync folder (or a git remote) reset to older files of a member
/// (docs/sharing.md, "A folder or remote reset to older files"): the
/// newest file of a member key in the folder carries a publication counter
/// below the last one this vault accepted from that key.
///
/// The order, chosen so that an unauthenticated header can neither make a
/// replica refuse nor accept anything:
/// 1. the scan reads the clear headers only (no key, no whole file) and
///    keeps, per member key, the file with the highest counter;
/// 2. a key whose highest counter is at or above the accepted one needs
///    nothing more: its files are skipped or merged as before (a merge
///    verifies the signature and refuses a counter below the accepted
///    one; skipping a file that brings nothing changes nothing, and a
///    forged higher counter hides no more than withholding the file does);
/// 3. a key whose highest counter is below: that file's Ed25519 signature
///    is verified under the key the header names (BLAKE2b-512 of every byte
///    before it, as the import does) — only then is the folder said to
///    serve an older file of that member (rule `publication-counter`); a
///    signature that does not verify is rule `signature` (the file was
///    changed).
struct OlderPublication: Sendable {
    var path: String
    var header: BundleHeader
    /// The last counter this vault accepted from the header's publisher.
    var accepted: UInt64

    /// The newest file per publisher key among `files` whose counter is
    /// below the one `accepted` holds for its key, leaving out `ownKeys`
    /// (this replica's identity: its record also counts its own
    /// publications).
    static func find(
        newest: [[UInt8]: (path: String, header: BundleHeader)], accepted: [[UInt8]: UInt64], ownKeys: Set<[UInt8]>
    ) -> [OlderPublication] {
        var out: [OlderPublication] = []
        for (key, f) in newest where !ownKeys.contains(key) {
            guard let last = accepted[key], f.header.publication < last else { continue }
            out.append(OlderPublication(path: f.path, header: f.header, accepted: last))
        }
        return out.sorted { $0.path < $1.path }
    }

    /// Step 3: the refusal, once the file's signature is checked.
    /// `name`: the publisher's member name, if it is one.
    func refusal(name: String?) -> CofferError {
        guard let key = header.publisher else { return CofferError(.internalError, "an unsigned file has no publication counter") }
        guard Self.signatureVerifies(path: path, publisher: key) else {
            return CofferError.bundle(.ruleBroken(.signature, "the signature does not match the bundle and the key of its publisher"), path: path)
        }
        return SignedImport.olderPublication(path: path, counter: header.publication, last: accepted, who: SignedImport.who(name, key))
    }

    /// Whether the file at `path` ends with a valid Ed25519 signature by
    /// `publisher` of BLAKE2b-512 of every byte before it (format 6). Needs
    /// no vault key. A file that cannot be read does not verify.
    static func signatureVerifies(path: String, publisher: [UInt8]) -> Bool {
        let fd = Glibc.open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG, st.st_size > Int64(BundleFormat.signatureLength) else { return false }
        let digest = StreamingDigest()
        var remaining = Int64(st.st_size) - Int64(BundleFormat.signatureLength)
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while remaining > 0 {
            let want = Int(min(Int64(buffer.count), remaining))
            let n = buffer.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, want) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return false }
            digest.update(buffer[0..<n])
            remaining -= Int64(n)
        }
        var signature = [UInt8](repeating: 0, count: BundleFormat.signatureLength)
        var got = 0
        while got < signature.count {
            let n = signature.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + got, $0.count - got) }
            if n < 0, errno == EINTR { continue }
            guard n > 0 else { return false }
            got += n
        }
        return MemberPublicKey.isValidSignature(signature, of: digest.finish(), signKey: publisher)
    }
}

extension Replication {
    /// Step 3 of ``OlderPublication``: each older file refused, named by
    /// its member (this replica's own identity left out).
    func refuseOlderPublications(_ older: [OlderPublication], report: inout SyncReport) throws(CofferError) {
        guard !older.isEmpty else { return }
        let own = try ownSignKey()
        let members: [[UInt8]: RosterEntry] = try CofferError.wrap { try store.read { db in try self.roster(db) } }
        for o in older where o.header.publisher != own {
            report.failed.append(.init(path: o.path, error: o.refusal(name: o.header.publisher.flatMap { members[$0]?.name })))
        }
    }
}
