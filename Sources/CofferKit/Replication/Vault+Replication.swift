import CofferCrypto
import CofferStore
import CofferSync
import Foundation

// The façade's replication operations: each is ``Replication``'s.
extension Vault {
    /// The most a bundle's header may ask `clone` to spend on Argon2id
    /// before anything in the bundle is authenticated
    /// (docs/bundle-format.md, "Security considerations"): 1 GiB of memory, 10 passes, 8 lanes, four times the
    /// memory and three times the passes of ``KDFParameters/default``.
    /// `coffer clone --allow-expensive-kdf` lifts it (up to the hard
    /// limits of ``KDFParameters/validate()``: 4 GiB, 32 passes).
    public static let cloneKDFCeiling = KDFParameters(memoryKiB: 1024 * 1024, iterations: 10, parallelism: 8)

    /// How many times `syncGit` pushes before giving up when the remote
    /// keeps moving (other machines pushing at the same moment).
    public static let gitPushAttempts = 5

    /// The name of a replica's snapshot or segment in a sync folder
    /// (docs/sync.md, "Snapshots and segments").
    public static func segmentFileName(replica: ReplicaID, first: UInt64, last: UInt64) -> String {
        SegmentName(replica: replica, first: first, last: last).fileName
    }

    /// Merges every other replica's bundle found in `dir` (whatever its
    /// file name: conflict copies made by Syncthing or Dropbox are just more
    /// bundles), then, when this replica's state changed since its newest
    /// file there, writes its next file: a segment holding what changed, or
    /// a snapshot when its segments outgrew half of its snapshot
    /// (docs/sync.md, "Snapshots and segments"). Each file is written
    /// whole under a new name and never rewritten; the segments a new one
    /// replaces are removed after it. Never writes or removes a file that
    /// does not carry this replica's name. A bundle that cannot be merged is
    /// reported in ``SyncReport/failed`` and the others still merge. With
    /// `dryRun`, computes what would change and changes nothing.
    ///
    /// A bundle of a newer key epoch (another replica ran `coffer rekey`)
    /// is adopted first: `adoptKey` is asked for the passphrase that opens
    /// the new key (given the epoch, the bundle's path and the attempt
    /// number; nil gives up after a wrong one), this vault is
    /// re-encrypted under it (``adoptKeyEpoch(ofBundleAt:passphrase:allowExpensiveKDF:)``)
    /// and the sync goes on under the new key. Without `adoptKey`, or in a
    /// dry run, such bundles are reported failed (exit 77's message) and
    /// the others merge. Bundles of an older epoch are skipped
    /// (``SyncReport/Skipped/Reason/olderKeyEpoch``).
    ///
    /// Before any Argon2id run for a newer key: a bundle whose epoch is
    /// more than ``KeyEpoch/maxJump`` ahead is refused (rule
    /// `key-epoch-jump`, exit 65's message), and unless
    /// `adoptAboveOwnKDF`, so is the adoption of a key whose Argon2id
    /// parameters exceed this vault's own (exit 77's message): anyone who
    /// can drop a file into the folder can write such a header.
    ///
    /// `identity`: the member identity this replica was unlocked with
    /// (docs/sharing.md, "Member replicas"): a newer key epoch is adopted
    /// through the box sealed to it in the newest bundle, not with a
    /// passphrase; when that bundle seals nothing to it (the member was
    /// removed), the sync is refused (exit 77) and nothing is merged.
    public func sync(
        dir: String, dryRun: Bool = false, adoptAboveOwnKDF: Bool = false,
        adoptKey: ((KeyEpoch, String, Int) throws(CofferError) -> SecretBytes?)? = nil, identity: MemberIdentity? = nil
    ) throws(CofferError) -> SyncReport {
        try replication.sync(dir: dir, dryRun: dryRun, adoptAboveOwnKDF: adoptAboveOwnKDF, adoptKey: adoptKey, identity: identity)
    }

    /// Refuses, without the passphrase, a sync folder that holds bundles
    /// of other vaults and none of this one (see ``sync(dir:dryRun:)``).
    public static func checkSyncFolder(_ dir: String, file: VaultFile) throws(CofferError) {
        try Replication.checkSyncFolder(dir, file: file)
    }

    /// Checks, without the passphrase, whether `sync dir` has anything to
    /// do for the vault at `file`: true when every other replica's bundle
    /// is covered by the vault's summary, this replica's own bundle is
    /// current, no file needs reporting, and the file still owns its
    /// replica id. Its listing of `dir` also sweeps stale bundle
    /// temporaries, as every sync does (a no-op sync must not leave them
    /// for the transport to copy everywhere): call it only for a sync that
    /// is not a dry run.
    public static func syncIsNoop(file: VaultFile, dir: String) throws(CofferError) -> Bool {
        try Replication.syncIsNoop(file: file, dir: dir)
    }

    /// What importing the bundles at `paths` (in order) would change. Reads
    /// and authenticates them fully; writes nothing.
    public func previewImport(paths: [String]) throws(CofferError) -> (reports: [ImportReport], preview: MergePreview) {
        try replication.previewImport(paths: paths)
    }

    /// Every replica this vault has seen writes from, with the highest
    /// counter seen and when a bundle from it was last imported.
    public func replicas() throws(CofferError) -> [ReplicaInfo] {
        try replication.replicas()
    }
    /// Reads a bundle's clear header. Needs no key: nothing here is
    /// authenticated until the bundle is imported.
    public static func inspectBundle(at path: String) throws(CofferError) -> BundleInfo {
        try Replication.inspectBundle(at: path)
    }

    /// This replica's summary (what it has seen), for `export --since` on
    /// another replica.
    public func summaryFile() throws(CofferError) -> BundleSummaryFile {
        try replication.summaryFile()
    }

    /// Writes ``summaryFile()`` to `path` atomically.
    public func writeSummary(to path: String) throws(CofferError) {
        try replication.writeSummary(to: path)
    }

    /// Reads a summary file written by `coffer summary` on another replica
    /// of this vault.
    public func readSummary(at path: String) throws(CofferError) -> BundleSummaryFile {
        try replication.readSummary(at: path)
    }

    /// Writes a bundle to `path` (atomically: a temporary file renamed
    /// over it). A full bundle carries every version of every `sync` item;
    /// with `since` (the receiver's summary) only versions whose dot the
    /// receiver has not seen. `local-only` items never enter a bundle.
    @discardableResult
    public func exportBundle(to path: String, since: VersionVector? = nil) throws(CofferError) -> ExportReport {
        try replication.exportBundle(to: path, since: since)
    }

    /// Merges the bundle at `path` into this vault in one transaction:
    /// every item record is merged register by register
    /// (``ItemState/merged(with:)``) as it streams in; any failure rolls
    /// back the whole bundle and the vault is unchanged.
    ///
    /// `progress`, when given, is called every 1,000 records with the
    /// number of records read and the header's record count.
    @discardableResult
    public func importBundle(at path: String, progress: ImportProgress? = nil) throws(CofferError) -> ImportReport {
        try replication.importBundle(at: path, progress: progress)
    }

    /// Creates a new replica at `vaultPath` from a full bundle and the
    /// passphrase of the vault that wrote it: same vault id, key wrapping
    /// and KDF parameters as the bundle's header, a new replica id, then
    /// the bundle imported. Nothing is left at `vaultPath` on failure.
    ///
    /// The bundle's Argon2id parameters are not authenticated until the
    /// passphrase has run through them: unless `allowExpensiveKDF`, any
    /// parameter above ``cloneKDFCeiling`` is refused first.
    ///
    /// `merging`: more bundles of the same vault (`clone DIR`'s other
    /// files), merged into the new vault before it appears at `vaultPath`.
    public static func clone(
        bundleAt path: String, to vaultPath: String, passphrase: SecretBytes, allowExpensiveKDF: Bool = false,
        progress: ImportProgress? = nil, merging rest: CloneMerge? = nil
    ) throws(CofferError) -> ImportReport {
        try Replication.clone(
            bundleAt: path, to: vaultPath, passphrase: passphrase, allowExpensiveKDF: allowExpensiveKDF, progress: progress, merging: rest)
    }

    /// Clones with a member identity (`coffer clone --identity FILE`,
    /// docs/sharing.md "Member replicas"): the bundle's master key sealed
    /// to `identity` opens it (no passphrase, no Argon2id); the new file
    /// keeps that key sealed to the identity (vault format 8) and the
    /// passphrase wrapping it received, unchanged. Fails with
    /// ``CofferError/Kind/wrongPassphrase`` (exit 77) when no box in the
    /// bundle opens with the identity; no file is left behind.
    public static func clone(
        bundleAt path: String, to vaultPath: String, identity: MemberIdentity, progress: ImportProgress? = nil, merging rest: CloneMerge? = nil
    ) throws(CofferError) -> ImportReport {
        try Replication.clone(
            bundleAt: path, to: vaultPath, key: .identity(identity), allowExpensiveKDF: false, progress: progress, integrity: .full, merging: rest)
    }
    /// Re-stamps this replica's current versions dated more than
    /// ``BundleValidation/clockSkew`` (the receivers' tolerance) after
    /// now: each item concerned takes one new dot of this replica (one
    /// write), and each such version becomes a version with that dot, its
    /// vector plus the dot (so it supersedes only the version it replaces;
    /// a concurrent side stays a conflict), the current time and the same
    /// value. A deleted item stays deleted (its delete markers become one
    /// marker of the new dot, covering what they covered). Local-only
    /// items are left as they are (they travel in no bundle). Returns nil
    /// when there was nothing to re-stamp.
    ///
    /// Without `acknowledgedUpTo`, the check every write makes first: the
    /// newest version of this replica (one index seek); only when it is
    /// dated too far ahead are the others looked at. With it (`sync`,
    /// which knows from the folder's headers which of this replica's
    /// writes every other replica has merged), the versions with a counter
    /// above it are looked at, whatever the newest one says (a write made
    /// by an older coffer after the clock came back would hide the others
    /// from the quick check).
    public func restampFutureWrites(acknowledgedUpTo floor: UInt64? = nil) throws(CofferError) -> ClockRestamp? {
        try replication.restampFutureWrites(acknowledgedUpTo: floor)
    }
    /// Syncs through a git work tree `dir` whose remote is shared by every
    /// machine (docs/sync.md, "git"): merges and writes this replica's
    /// bundle, commits it if it changed, fetches and rebases onto the
    /// remote branch (never a conflict: each machine changes only its own
    /// file), merges what arrived, commits again, and pushes; a push
    /// rejected because another machine pushed first is retried (at most
    /// `attempts` times). Works with an empty remote (the first push
    /// creates the branch) and with nothing to commit. Runs on one machine
    /// are serialized by a lock in the repository's git folder.
    ///
    /// `adoptKey` is passed to every round's ``sync(dir:dryRun:adoptKey:)``:
    /// a bundle of a newer key epoch is adopted, and the later rounds run
    /// under the new key.
    public func syncGit(
        dir: String, remote: String? = nil, attempts: Int = Vault.gitPushAttempts, note: (String) -> Void = { _ in },
        adoptAboveOwnKDF: Bool = false,
        adoptKey: ((KeyEpoch, String, Int) throws(CofferError) -> SecretBytes?)? = nil, identity: MemberIdentity? = nil
    ) throws(CofferError) -> GitSyncReport {
        try replication.syncGit(
            dir: dir, remote: remote, attempts: attempts, note: note, adoptAboveOwnKDF: adoptAboveOwnKDF, adoptKey: adoptKey, identity: identity)
    }
    /// The version of this vault's passphrase wrapping.
    public func keyWrappingVersion() throws(CofferError) -> KeyWrappingVersion {
        try replication.keyWrappingVersion()
    }
    /// The clear headers of every bundle in `dir` (regular, non-hidden
    /// files), sorted by file name. Files that are not bundles, or whose
    /// header is damaged, are left out. Needs no key.
    public static func bundlesInFolder(_ dir: String) throws(CofferError) -> [BundleInfo] {
        try Replication.bundlesInFolder(dir)
    }

    /// The bundle a clone should start from: the newest full bundle (by
    /// the time in its header, then by path). Nil when there is none.
    public static func newestFullBundle(_ bundles: [BundleInfo]) -> BundleInfo? {
        Replication.newestFullBundle(bundles)
    }

    /// Whether merging a bundle with this header would change nothing: this
    /// vault has seen everything its summary claims, and its passphrase
    /// wrapping is not newer than this vault's.
    public func bringsNothing(_ header: BundleHeader) throws(CofferError) -> Bool {
        try replication.bringsNothing(header)
    }

    /// Whether `dir` exists and is a folder.
    public static func isFolder(_ dir: String) -> Bool {
        Replication.isFolder(dir)
    }

    /// Creates the sync folder `dir` (and its missing parents); the folder
    /// itself gets mode 0700. Returns false when it already existed.
    @discardableResult
    public static func createSyncFolder(_ dir: String) throws(CofferError) -> Bool {
        try Replication.createSyncFolder(dir)
    }
    /// Refuses a bundle whose Argon2id parameters exceed
    /// ``cloneKDFCeiling``, naming each parameter that does.
    public static func checkCloneKDF(_ kdf: KDFParameters, path: String) throws(CofferError) {
        try Replication.checkCloneKDF(kdf, path: path)
    }
}
