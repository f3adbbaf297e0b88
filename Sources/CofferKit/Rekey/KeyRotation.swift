import CofferCrypto
import CofferStore
import CofferSync
import Foundation

/// Key rotation: a new master key (rekey), key epochs and their adoption
/// from other replicas (docs/key-hierarchy.md, "Key epochs"). The
/// façade's forwarders are in Rekey/Vault+Rekey.swift.
package struct KeyRotation: VaultComponent {
    package let core: VaultCore
}

/// What a rekey (or the adoption of another replica's rekey) did.
public struct RekeyReport: Sendable, Equatable {
    /// The key epoch the vault is on now.
    public var epoch: KeyEpoch
    /// The epoch it was on before.
    public var previous: KeyEpoch
    /// Items re-encrypted (deleted ones included).
    public var items = 0
    /// Current field versions re-encrypted.
    public var versions = 0
    /// History versions re-encrypted.
    public var historyVersions = 0
    /// Shell sessions of the vault that were ended: they hold the old key
    /// (docs/key-hierarchy.md, "Sessions of the old epoch end"). A rule of
    /// the vault, kept by the library, so an app that rekeys through
    /// CofferKit leaves none behind either.
    public var sessionsEnded = 0
    /// Whether the shell session this vault was unlocked through was
    /// carried over to the new key (an adoption through a session: the
    /// session keeps working; not counted in ``sessionsEnded``).
    public var sessionCarriedOver = false
}

extension KeyRotation {
    /// Ends every shell session of `vaultID` in `directories` (after a
    /// rekey or the adoption of another replica's: they hold the old key).
    static func endSessions(of vaultID: VaultID, in directories: [SessionDirectory]) -> Int {
        directories.reduce(0) { $0 + Session.endAll(vaultID: vaultID, directory: $1) }
    }

    /// After adopting another replica's key (`master`, committed): ends
    /// every session of the vault, as a rekey does, except that the
    /// session this vault was unlocked through is carried over to the new
    /// key (the command that adopted proved it holds the new key; the
    /// shell's session keeps working, same token and lifetime). Returns
    /// the vault under the new key, holding the same identity.
    func afterAdoption(master: SecretBytes, identity: MemberIdentity?, sessionDirectories: [SessionDirectory], report: inout RekeyReport)
        throws(CofferError) -> Vault
    {
        let link = core.session.value
        let header = link.flatMap { Session.header(of: $0) }
        // The session's own identity, read before its files are wiped.
        let sessionIdentity = link == nil ? nil : try? core.unlockedIdentity.load()
        report.sessionsEnded = KeyRotation.endSessions(of: vaultID, in: sessionDirectories)
        let next = try VaultFile.open(path: path).unlock(masterKey: master)
        if let held = sessionIdentity ?? identity {
            next.core.unlockedIdentity.set(held)
        } else {
            core.unlockedIdentity.copy(to: next.core.unlockedIdentity)
        }
        if let link, let header, sessionDirectories.contains(link.directory),
            Session.carryOver(link, header: header, identity: sessionIdentity, to: next)
        {
            next.core.session.set(link)
            report.sessionCarriedOver = true
            report.sessionsEnded = max(0, report.sessionsEnded - 1)
        }
        return next
    }
}

extension VaultFile {
    /// Rotates the master key (`coffer rekey`, docs/key-hierarchy.md
    /// §Master-key rotation): a new random master key, wrapped under
    /// `passphrase` (the current one, or a new one) with a fresh salt and
    /// `kdf` (default: the current parameters); in one SQLite transaction
    /// every current and history version is re-encrypted under the new item
    /// key, every user field's register id and every item's name hash
    /// re-derived, every item record re-sealed, the header, wrapping version
    /// and key epoch replaced and the vault MAC rebuilt. Old or new, never
    /// half. Returns the vault unlocked under the new key.
    ///
    /// `vault` must have been unlocked with the passphrase (a session is
    /// not enough to rotate the key it holds). `beforeCommit` runs inside
    /// the transaction, just before it commits (tests interrupt there).
    /// Once it has committed, every shell session of the vault in
    /// `sessionDirectories` is ended (``RekeyReport/sessionsEnded``).
    public func rekey(
        _ vault: Vault, passphrase: SecretBytes, kdf newKDF: KDFParameters? = nil,
        sessionDirectories: [SessionDirectory] = SessionDirectory.allCandidates(), beforeCommit: () -> Void = {}
    ) throws(CofferError) -> (vault: Vault, report: RekeyReport) {
        guard vault.file === self else { throw CofferError(.internalError, "rekey called with another file's vault") }
        let kdf = newKDF ?? self.kdf
        do { try kdf.validate() } catch { throw CofferError(.usage, "invalid KDF parameters: \(error)") }
        guard passphrase.count > 0 else {
            throw CofferError(.usage, "the passphrase is empty", hint: "choose a passphrase of several words")
        }
        guard passphrase.nfcNormalizedUTF8() != nil else {
            throw CofferError(.usage, "the passphrase is not valid UTF-8 text", hint: "type it in a UTF-8 terminal, or save the passphrase file as UTF-8")
        }
        let local = try CofferError.wrap { try store.read { db in try Queries.localReplica(db) } }
        let now = Clock.nowMillis()
        let epoch = keyEpoch.next(by: local.id, at: now)
        guard epoch.number <= KeyEpoch.maxNumber else {
            throw CofferError(.badData, "the key epoch of \(path) cannot grow further")
        }
        let master = SecretBytes.random(count: 32)
        let wrapped: (salt: [UInt8], wrapped: [UInt8])
        do {
            wrapped = try KeyHierarchy.wrapMasterKey(master, passphrase: passphrase, vault: header.vaultID, kdf: kdf, epoch: epoch)
        } catch {
            throw CofferError(.usage, "cannot derive a key with these KDF parameters: \(error)")
        }
        var report = try vault.keyRotation.translate(
            to: master, epoch: epoch, kdf: kdf, salt: wrapped.salt, wrappedKey: wrapped.wrapped,
            wrapping: { $0.next(by: local.id, at: now) }, beforeCommit: beforeCommit)
        report.sessionsEnded = KeyRotation.endSessions(of: header.vaultID, in: sessionDirectories)
        return (try VaultFile.open(path: path).unlock(masterKey: master), report)
    }
}

/// What a bundle's key epoch means to a vault (``Vault/keyEpochStatus(ofBundle:)``).
public enum BundleKeyEpochStatus: Sendable, Equatable {
    /// The bundle is written under this vault's key.
    case same
    /// The bundle was written after a rekey this vault has not seen: adopt
    /// it (``Vault/adoptKeyEpoch(ofBundleAt:passphrase:allowExpensiveKDF:)``)
    /// before importing it.
    case newer(KeyEpoch)
    /// The bundle was written under a key this vault replaced: refused.
    case older(KeyEpoch)
}

extension KeyRotation {
    package var keyEpoch: KeyEpoch { file.keyEpoch }

    /// How a bundle header's key epoch compares with this vault's.
    package func keyEpochStatus(of header: BundleHeader) -> BundleKeyEpochStatus {
        if header.keyEpoch == keyEpoch { return .same }
        return header.keyEpoch > keyEpoch ? .newer(header.keyEpoch) : .older(header.keyEpoch)
    }

    package func keyEpochStatus(ofBundleAt path: String) throws(CofferError) -> BundleKeyEpochStatus {
        let header = try Vault.inspectBundle(at: path).header
        guard header.vaultID == vaultID else { return .same }
        return keyEpochStatus(of: header)
    }

    /// The refusal of a bundle written under a key this vault replaced.
    static func olderEpochError(path: String, bundle: KeyEpoch, vault: KeyEpoch) -> CofferError {
        CofferError(
            .badData,
            "\(path) was written under key epoch \(bundle.number), older than this vault's key epoch \(vault.description); nothing was imported",
            remedy: .init(
                .adoptNewerEpochFirst,
                "the replica that wrote it must first import a bundle of epoch \(vault.number): it adopts the new key and writes its edits again under it",
                path: path, name: "\(vault.number)"))
    }

    /// The refusal of a bundle whose key epoch is further ahead than any
    /// replica can fall behind (rule `key-epoch-jump`): checked on the
    /// clear header, before any Argon2id run.
    static func epochJumpError(path: String, bundle: KeyEpoch, vault: KeyEpoch) -> CofferError {
        CofferError(
            .badData,
            "\(path) breaks the bundle rule key-epoch-jump (a bundle's key epoch is at most \(KeyEpoch.maxJump) above the receiver's): it claims key epoch \(bundle.number), this vault is on \(vault.number); no key was adopted and nothing was imported",
            hint:
                "a key holder forged it, or the vault was rekeyed more than \(KeyEpoch.maxJump) times without this replica: remove the file, or clone the vault again from a machine you trust"
        )
    }

    /// The refusal, by `sync`, of a newer key whose Argon2id parameters
    /// exceed this vault's own: the header is not authenticated until the
    /// passphrase has run through them, and anyone who can drop a file
    /// into the folder can write one (`coffer sync --adopt-key` allows it).
    static func expensiveAdoptionError(path: String, bundle: BundleHeader, own: KDFParameters) -> CofferError {
        let b = bundle.kdf
        var over: [String] = []
        if b.memoryKiB > own.memoryKiB { over.append("memory \(Replication.describeKiB(b.memoryKiB)) (this vault: \(Replication.describeKiB(own.memoryKiB)))") }
        if b.iterations > own.iterations { over.append("passes \(b.iterations) (this vault: \(own.iterations))") }
        if b.parallelism > own.parallelism { over.append("lanes \(b.parallelism) (this vault: \(own.parallelism))") }
        let who = bundle.keyEpoch.rekeyedBy.map { String($0.hex.prefix(8)) } ?? "another replica"
        let when = Clock.date(bundle.keyEpoch.rekeyedAt).ISO8601Format()
        return CofferError(
            .locked,
            "\(path) carries a new master key (key epoch \(bundle.keyEpoch.number), rekeyed on \(who) at \(when), not yet authenticated) whose Argon2id asks for \(over.joined(separator: ", ")), more than this vault's own; nothing was adopted",
            remedy: .init(.adoptKey, "if that rekey was yours, sync again adopting its key; if not, remove the file", path: path))
    }

    /// Whether any of `kdf`'s parameters exceeds `own`'s.
    static func exceeds(_ kdf: KDFParameters, _ own: KDFParameters) -> Bool {
        kdf.memoryKiB > own.memoryKiB || kdf.iterations > own.iterations || kdf.parallelism > own.parallelism
    }

    /// The refusal of a bundle of a newer epoch by an import that was not
    /// given the passphrase to adopt it.
    static func newerEpochError(path: String, bundle: KeyEpoch, vault: KeyEpoch) -> CofferError {
        CofferError(
            .locked,
            "\(path) was written after the master key was rotated on \(bundle.rekeyedBy.map { String($0.hex.prefix(8)) } ?? "another replica") (key epoch \(bundle.number); this vault is on \(vault.number)); the passphrase is needed once to adopt the new key",
            remedy: .init(.importWithPassphrase, "import or sync with the passphrase, not a session", path: path))
    }

    /// The bundle at `path`, refused unless it is of a newer key epoch
    /// this vault may adopt (both ways of adopting start here).
    private func openNewerEpochBundle(at path: String) throws(CofferError) -> (input: BundleFileInput, header: BundleHeader, prefix: [UInt8]) {
        let (input, header, prefix) = try replication.openOwnBundle(at: path)
        switch keyEpochStatus(of: header) {
        case .same:
            throw CofferError(.usage, "\(path) is written under this vault's key (epoch \(keyEpoch.number)): there is no newer key to adopt")
        case .older(let e):
            throw KeyRotation.olderEpochError(path: path, bundle: e, vault: keyEpoch)
        case .newer(let e):
            guard keyEpoch.mayAdopt(e) else { throw KeyRotation.epochJumpError(path: path, bundle: e, vault: keyEpoch) }
        }
        return (input, header, prefix)
    }

    package func adoptKeyEpoch(
        ofBundleAt path: String, passphrase: SecretBytes, allowExpensiveKDF: Bool = false,
        sessionDirectories: [SessionDirectory] = SessionDirectory.allCandidates()
    ) throws(CofferError) -> (vault: Vault, report: RekeyReport) {
        let (input, header, prefix) = try openNewerEpochBundle(at: path)
        if !allowExpensiveKDF { try Vault.checkCloneKDF(header.kdf, path: path) }
        let unwrapped: KeyHierarchy.Unwrapped
        do {
            unwrapped = try KeyHierarchy.unwrapMasterKey(
                passphrase: passphrase, vault: header.vaultID, kdf: header.kdf, salt: header.salt,
                wrapped: header.wrappedMasterKey, epoch: header.keyEpoch, bindings: [header.wrapBinding])
        } catch .authenticationFailed {
            throw CofferError(
                .wrongPassphrase, "wrong passphrase for the new key in \(path)",
                hint: "use the passphrase the vault has since the rekey on \(header.keyEpoch.rekeyedBy.map { String($0.hex.prefix(8)) } ?? "the other replica")"
            )
        } catch {
            throw CofferError(.badData, "cannot unwrap the new key in \(path): \(error)")
        }
        let master = unwrapped.master
        // The first chunk authenticates the whole header under the new
        // bundle key: a holder of the new key wrote it.
        do { _ = try BundleReader(header: header, prefix: prefix, input: input, bundleKey: KeyHierarchy.subKey(.bundle, of: master)) } catch {
            throw .bundle(error, path: path)
        }
        let expected = keyEpoch
        // translate makes this vault format 7: a rekey made by an older
        // build carries a legacy wrapping, bound here under the KEK the
        // passphrase just derived (same salt, same version).
        let wrappedKey =
            header.wrapBinding == .integrity
            ? header.wrappedMasterKey
            : KeyHierarchy.rewrapMasterKey(unwrapped, vault: header.vaultID, kdf: header.kdf, salt: header.salt, epoch: header.keyEpoch, binding: .integrity)
        var report = try translate(
            to: master, epoch: header.keyEpoch, kdf: header.kdf, salt: header.salt, wrappedKey: wrappedKey,
            wrapping: { _ in header.wrapping }, expecting: expected)
        let next = try afterAdoption(master: master, identity: nil, sessionDirectories: sessionDirectories, report: &report)
        return (next, report)
    }

    /// Adopts the newer master key of the bundle at `path` through the box
    /// sealed to `member` (a replica cloned with a member identity):
    /// refused (exit 77) when the bundle seals nothing to it — the member
    /// was removed and the key rotated without it. Otherwise as the
    /// passphrase adoption: the bundle authenticated under the new key,
    /// this vault re-encrypted under it in one transaction, the passphrase
    /// wrapping taken as received and the identity's sealed key replaced.
    package func adoptKeyEpoch(
        ofBundleAt path: String, identity member: MemberIdentity,
        sessionDirectories: [SessionDirectory] = SessionDirectory.allCandidates()
    ) throws(CofferError) -> (vault: Vault, report: RekeyReport) {
        let (input, header, prefix) = try openNewerEpochBundle(at: path)
        let sealed: SecretBytes?
        do { sealed = try header.openSealedKey(with: member.secretKey) } catch { throw .bundle(error, path: path) }
        guard let master = sealed else { throw KeyRotation.removedError(path: path, bundle: header.keyEpoch) }
        do { _ = try BundleReader(header: header, prefix: prefix, input: input, bundleKey: KeyHierarchy.subKey(.bundle, of: master)) } catch {
            throw .bundle(error, path: path)
        }
        guard header.wrapBinding == .integrity else {
            throw CofferError(.badData, "\(path) seals its key to members but its passphrase wrapping is of an older format")
        }
        var report = try translate(
            to: master, epoch: header.keyEpoch, kdf: header.kdf, salt: header.salt, wrappedKey: header.wrappedMasterKey,
            wrapping: { _ in header.wrapping }, expecting: keyEpoch)
        let next = try afterAdoption(master: master, identity: member, sessionDirectories: sessionDirectories, report: &report)
        return (next, report)
    }

    /// ``adoptKeyEpoch(ofBundleAt:identity:sessionDirectories:)``, or nil
    /// when the bundle seals nothing to `member` and `orPassphrase` lets
    /// the caller try the passphrase instead (the vault is unchanged).
    package func adoptKeyEpoch(ofBundleAt path: String, identity member: MemberIdentity, orPassphrase: Bool) throws(CofferError) -> (
        vault: Vault, report: RekeyReport
    )? {
        do { return try adoptKeyEpoch(ofBundleAt: path, identity: member) } catch  where orPassphrase && error.remedy?.action == .askToBeAdded {
            return nil
        }
    }

    /// The refusal of a newer key epoch that seals nothing to this
    /// replica's identity: its member was removed.
    static func removedError(path: String, bundle: KeyEpoch) -> CofferError {
        let who = bundle.rekeyedBy.map { String($0.hex.prefix(8)) } ?? "another replica"
        let when = Clock.date(bundle.rekeyedAt).ISO8601Format()
        return CofferError(
            .permissionDenied,
            "you were removed from this vault: the key was rotated on \(when) by replica \(who), and not sealed to your identity",
            remedy: .init(.askToBeAdded, "nothing was merged; this vault keeps what it had. Ask a member to add you again if that was a mistake", path: path))
    }

    package func adoptKeyEpoch(
        ofBundleAt path: String, passphrases: (KeyEpoch, Int) throws(CofferError) -> SecretBytes?
    ) throws(CofferError) -> (vault: Vault, report: RekeyReport) {
        let header = try Vault.inspectBundle(at: path).header
        var last: CofferError?
        var attempt = 0
        while true {
            guard let passphrase = try passphrases(header.keyEpoch, attempt) else {
                throw last ?? KeyRotation.newerEpochError(path: path, bundle: header.keyEpoch, vault: keyEpoch)
            }
            do {
                return try adoptKeyEpoch(ofBundleAt: path, passphrase: passphrase)
            } catch  where error.kind == .wrongPassphrase {
                last = error
                attempt += 1
            }
        }
    }

    /// Re-encrypts the whole vault under `master` in one transaction (the
    /// core of `rekey` and of adopting another replica's rekey). Checks the
    /// vault MAC and every item's record under the current key first; a
    /// version or record that fails is refused (exit 65) and nothing
    /// changes.
    func translate(
        to master: SecretBytes, epoch: KeyEpoch, kdf: KDFParameters, salt: [UInt8], wrappedKey: [UInt8],
        wrapping: (KeyWrappingVersion) -> KeyWrappingVersion, expecting expected: KeyEpoch? = nil,
        beforeCommit: () -> Void = {}
    ) throws(CofferError) -> RekeyReport {
        let target = Vault(file: file, rekeyTarget: master)
        let previous = expected ?? keyEpoch
        return try CofferError.wrap {
            // Holds the keys (a lock waits; a locked vault is refused), as
            // every write through ``VaultCore/write(_:)`` does.
            try keys.useAny {
                try store.writeImmediate { db in
                    guard try Queries.keyEpoch(db).epoch == previous else {
                        throw CofferError(
                            .busy, "the master key of \(path) was rotated by another process meanwhile",
                            hint: "run the command again")
                    }
                    try checkVaultMAC(db)
                    var report = RekeyReport(epoch: epoch, previous: previous)
                    try keys.item.keepingReadable {
                        try keys.record.keepingReadable {
                            try target.keys.item.keepingReadable {
                                try target.keys.record.keepingReadable {
                                    try target.keys.fieldID.keepingReadable {
                                        try target.keys.nameIndex.keepingReadable {
                                            for listed in try Queries.listedItems(db) {
                                                try translateItem(db, listed, into: target, report: &report)
                                            }
                                        }
                                    }
                                }
                            }
                        }
                    }
                    // A throwaway accumulator: the MAC is rebuilt from every
                    // row under the new key below.
                    let scratch = VaultMAC(key: target.keys.mac)
                    var header = try Queries.header(db)
                    header.kdfMemoryKiB = kdf.memoryKiB
                    header.kdfIterations = kdf.iterations
                    header.kdfParallelism = kdf.parallelism
                    header.kdfSalt = salt
                    header.wrappedMasterKey = wrappedKey
                    try Queries.updateKeyWrapping(db, header: header, mac: scratch)
                    try Queries.setFormatVersion(db, VaultStore.formatVersion)
                    try Queries.setKeyWrapping(db, wrapping(try Queries.keyWrapping(db)), mac: scratch)
                    try Queries.setKeyEpoch(db, epoch, check: KeyHierarchy.keyCheck(master: master, vault: vaultID, epoch: epoch))
                    // The identities allowed to unlock this file get the
                    // new key (vault format 8, docs/key-hierarchy.md).
                    let unlocks = try Queries.identityUnlocks(db)
                    if !unlocks.isEmpty {
                        try Queries.replaceIdentityUnlocks(db, Sharing.resealed(unlocks, master: master, vault: vaultID, epoch: epoch))
                    }
                    let mac = VaultMAC(key: target.keys.mac)
                    try Queries.computeMAC(db, into: mac)
                    try Queries.setStoredMAC(db, mac)
                    beforeCommit()
                    return report
                }
            }
        }
    }

    /// Re-encrypts one item under `target`'s keys.
    private func translateItem(_ db: StoreConnection, _ listed: Queries.ListedItem, into target: Vault, report: inout RekeyReport) throws {
        let id = listed.row.id
        let record = try openRecord(listed.record, item: id)
        let state = try Queries.cachedItemState(db, id: id)
        try check(record, row: listed.row, state: state)
        func move(_ v: FieldVersion, register rid: RegisterID) throws -> (RegisterID, FieldVersion, FieldPayload) {
            let payload = try open(v, item: id, register: rid)
            // A user field's register id is the field-id hash of the item
            // id and the name's exact bytes (docs/bundle-format.md, rule
            // register-name): every replica derives the same new id.
            let newID = rid.isMetadata ? rid : KeyHierarchy.registerID(field: payload.name, item: id, fieldIDKey: target.keys.fieldID)
            let sealed = target.seal(
                payload, item: id, register: newID, dot: v.dot, vector: v.vector, at: v.writtenAt, tombstone: v.isTombstone)
            return (newID, sealed, payload)
        }
        var moved = ItemState(id: id)
        var versions: [(RegisterID, FieldVersion)] = []
        var shown: [RegisterID: FieldPayload] = [:]
        for (rid, list) in state.registers {
            let shownDot = Register.shown(list)?.dot
            for v in list {
                let (newID, sealed, payload) = try move(v, register: rid)
                moved.registers[newID, default: []].append(sealed)
                versions.append((newID, sealed))
                if v.dot == shownDot, !v.isTombstone { shown[newID] = payload }
                report.versions += 1
            }
        }
        for k in moved.registers.keys { moved.registers[k]?.sort { $0.dot < $1.dot } }
        var history: [(RegisterID, FieldVersion, Int64)] = []
        for (rid, v, at) in try Queries.history(db, item: id) {
            let (newID, sealed, _) = try move(v, register: rid)
            history.append((newID, sealed, at))
            report.historyVersions += 1
        }
        let row = try target.derivedRow(
            for: moved, policy: listed.row.policy, createdAt: listed.row.createdAt, updatedAt: listed.row.updatedAt)
        let sealedRecord = try target.sealRecord(state: moved, row: row, shown: shown)
        try Queries.rewriteItemForRekey(db, row: row, record: sealedRecord, versions: versions, history: history)
        report.items += 1
    }
}
