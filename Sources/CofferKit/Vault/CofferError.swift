import CofferCrypto
import CofferStore
import CofferSync
import CofferSystem

#if canImport(Glibc)
import Glibc
#endif

/// Every failure CofferKit reports: what kind it is (for code that reacts
/// to it), a one-line message saying what went wrong, and what to do about
/// it — as data (``remedy``, for code that offers the action) and in words
/// (``hint``). Messages never contain a secret.
///
/// CofferKit speaks to applications, not to one command line: no message,
/// hint or remedy text names a `coffer` command or a command-line option
/// (`scripts/check-layers.sh` enforces it). A program words the error in
/// its own terms from the structured parts — ``kind``, ``remedy`` (its
/// ``Remedy/action`` and the item, field or path it concerns) and
/// ``argument`` — and may print ``message`` and ``hint`` as they are,
/// which read well to anyone. The `coffer` command line does exactly that:
/// it turns ``Remedy/Action/listItems`` into "list items with `coffer ls`".
public struct CofferError: Error, Sendable, CustomStringConvertible, Equatable {
    /// What went wrong, for programs.
    ///
    /// A struct with one constant per kind rather than an enum, as GRDB's
    /// `ResultCode`, so that a later CofferKit can add a kind without
    /// breaking an application's `switch`: compare (`error.kind == .locked`)
    /// or `switch` with a `default` for the kinds you do not handle. The raw
    /// value is the kind's name (`"wrongPassphrase"`), also its
    /// `description`. A kind this CofferKit does not know (made with
    /// ``init(rawValue:)``) has exit code 70, like ``internalError``.
    public struct Kind: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The kind's name, as written after the dot (`"locked"`).
        public let rawValue: String

        public init(rawValue: String) {
            self.rawValue = rawValue
        }

        public var description: String { rawValue }

        /// The command line or an argument value is wrong.
        public static let usage = Kind(rawValue: "usage")
        /// The passphrase does not unlock the vault.
        public static let wrongPassphrase = Kind(rawValue: "wrongPassphrase")
        /// The vault needs a passphrase or session and none is available,
        /// or a session is expired, forged or of another vault.
        public static let locked = Kind(rawValue: "locked")
        /// No vault at the path.
        public static let vaultNotFound = Kind(rawValue: "vaultNotFound")
        /// A vault already exists where one would be created.
        public static let vaultExists = Kind(rawValue: "vaultExists")
        /// No item by that name.
        public static let itemNotFound = Kind(rawValue: "itemNotFound")
        /// An item by that name already exists.
        public static let duplicateName = Kind(rawValue: "duplicateName")
        /// Several items share the name (after a sync); address one by id.
        public static let ambiguousName = Kind(rawValue: "ambiguousName")
        /// A file named on the command line does not exist.
        public static let fileNotFound = Kind(rawValue: "fileNotFound")
        /// Input data is malformed, corrupted, tampered with or foreign.
        public static let badData = Kind(rawValue: "badData")
        /// A file or folder cannot be created or written.
        public static let cannotCreate = Kind(rawValue: "cannotCreate")
        /// Reading or writing failed part-way: a full disk, an I/O error.
        public static let ioError = Kind(rawValue: "ioError")
        /// A program or service it needs is not there: gpg, ssh-keygen,
        /// a session bus.
        public static let unavailable = Kind(rawValue: "unavailable")
        /// The vault is locked by another process; try again.
        public static let busy = Kind(rawValue: "busy")
        /// A credential failed its source's format rule.
        public static let invalidCredential = Kind(rawValue: "invalidCredential")
        /// An internal failure (a bug, or a broken environment).
        public static let internalError = Kind(rawValue: "internalError")
        /// The vault or a file cannot be read or written by this user: no
        /// permission, or read-only (file, folder or file system).
        public static let permissionDenied = Kind(rawValue: "permissionDenied")
    }

    /// What to do about an error, as data: an ``Action`` a program can
    /// offer (a button, its own command), the item, field or path it
    /// concerns, and ``text``, the same advice in plain words that name no
    /// program or option ("list the vault's items").
    ///
    /// Called a remedy, not a suggestion, so as not to be confused with
    /// ``Suggestion``, the "did you mean …?" of a mistyped name.
    public struct Remedy: Sendable, Equatable, CustomStringConvertible {
        /// What to do, for programs.
        ///
        /// Like ``CofferError/Kind``, a struct with one constant per action
        /// rather than an enum, so that a later CofferKit can add an action
        /// without breaking an application's `switch`: handle the actions
        /// you offer and show ``Remedy/text`` for the others (`default`).
        /// The raw value is the action's name (`"listItems"`).
        public struct Action: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
            /// The action's name, as written after the dot (`"listItems"`).
            public let rawValue: String

            public init(rawValue: String) {
                self.rawValue = rawValue
            }

            public var description: String { rawValue }

            // Items
            /// List the vault's items (a name or id was not found).
            public static let listItems = Action(rawValue: "listItems")
            /// Give more hex digits of the id: the prefix matches several items.
            public static let giveMoreIDDigits = Action(rawValue: "giveMoreIDDigits")
            /// Several items share a name: address one by id (``Remedy/name``
            /// lists them, `id:…`), then rename or remove it.
            public static let addressByID = Action(rawValue: "addressByID")
            /// The name is taken: choose another, or rename ``Remedy/item``.
            public static let chooseAnotherName = Action(rawValue: "chooseAnotherName")
            /// An edit that changes nothing: say what to change.
            public static let sayWhatToChange = Action(rawValue: "sayWhatToChange")
            /// ``Remedy/item`` has no field: add one.
            public static let addField = Action(rawValue: "addField")
            /// A field cannot be changed in the text editor: change
            /// ``Remedy/field`` of ``Remedy/item`` directly.
            public static let editFieldDirectly = Action(rawValue: "editFieldDirectly")
            /// An attachment (``Remedy/name``) cannot be edited as text:
            /// replace it with a file.
            public static let replaceAttachment = Action(rawValue: "replaceAttachment")
            /// Moving or copying a prefix: end both names with `/`.
            public static let endPrefixesWithSlash = Action(rawValue: "endPrefixesWithSlash")

            // Programs' environment
            /// Two fields would set one variable: give ``Remedy/field`` of
            /// ``Remedy/item`` another variable name, or select fewer items.
            public static let renameVariable = Action(rawValue: "renameVariable")
            /// A field would set a dangerous variable (``Remedy/name``): allow
            /// that name for ``Remedy/item``, or give ``Remedy/field`` another.
            public static let allowVariableName = Action(rawValue: "allowVariableName")

            // Requirements and credential formats
            /// Check the path of the requirements manifest (``Remedy/path``).
            public static let checkManifestPath = Action(rawValue: "checkManifestPath")
            /// Give the manifest a name.
            public static let nameManifest = Action(rawValue: "nameManifest")
            /// List the registered requirements manifests.
            public static let listManifests = Action(rawValue: "listManifests")
            /// A value fails its source's format rule: check it, or store it
            /// without the check.
            public static let checkValueOrForce = Action(rawValue: "checkValueOrForce")
            /// A value fails the rule of a registered manifest: check it.
            public static let checkValue = Action(rawValue: "checkValue")

            // Unlocking and sessions
            /// A passphrase is needed and none can be asked for: unlock a
            /// shell session, or give the passphrase another way.
            public static let givePassphrase = Action(rawValue: "givePassphrase")
            /// A session cannot be used: unlock the vault again (the one at
            /// ``Remedy/path`` when it is not the session's).
            public static let unlockAgain = Action(rawValue: "unlockAgain")
            /// A newer master key must be adopted: import or sync with the
            /// passphrase, not a session.
            public static let importWithPassphrase = Action(rawValue: "importWithPassphrase")

            // The vault file
            /// No vault at ``Remedy/path``: create one, or open another path.
            public static let createVault = Action(rawValue: "createVault")
            /// ``Remedy/path`` is not a vault: check the path.
            public static let checkVaultPath = Action(rawValue: "checkVaultPath")
            /// A file exists where a vault would be created: use it, or
            /// choose another path.
            public static let useExistingVault = Action(rawValue: "useExistingVault")
            /// A file exists where a vault would be created: choose another path.
            public static let chooseAnotherVaultPath = Action(rawValue: "chooseAnotherVaultPath")
            /// A clone's target exists: choose another path, or import the
            /// bundle into that vault.
            public static let importIntoExistingVault = Action(rawValue: "importIntoExistingVault")
            /// The vault cannot be read by this user: check the owner and
            /// mode of ``Remedy/path`` and its folders.
            public static let checkPermissions = Action(rawValue: "checkPermissions")
            /// The vault file was modified outside CofferKit or is damaged:
            /// verify it for details, then restore it.
            public static let verifyVault = Action(rawValue: "verifyVault")
            /// The vault file cannot be trusted: restore it from a backup or
            /// clone it again from a bundle.
            public static let restoreVault = Action(rawValue: "restoreVault")

            // Bundles, sync and replicas
            /// Give a bundle file, not a folder.
            public static let giveBundle = Action(rawValue: "giveBundle")
            /// Give a bundle file (or standard input), not a folder.
            public static let giveBundleOrStandardInput = Action(rawValue: "giveBundleOrStandardInput")
            /// Give the sync folder, not a bundle; importing merges one file.
            public static let giveSyncFolder = Action(rawValue: "giveSyncFolder")
            /// A bundle of another vault is in the sync folder: keep one
            /// vault's bundles per folder.
            public static let separateVaults = Action(rawValue: "separateVaults")
            /// The sync folder or git remote served an older file of a
            /// member than one this vault accepted (rule
            /// `publication-counter`): put that member's newer files back,
            /// or have the member sync again.
            public static let restoreNewerFiles = Action(rawValue: "restoreNewerFiles")
            /// The sync folder (``Remedy/path``) holds another vault's bundles:
            /// clone that vault (moving ``Remedy/vaultPath`` aside), or use
            /// another folder.
            public static let cloneOrUseAnotherFolder = Action(rawValue: "cloneOrUseAnotherFolder")
            /// Import bundles only into replicas of the vault that wrote them;
            /// cloning makes a new replica.
            public static let importIntoReplica = Action(rawValue: "importIntoReplica")
            /// A delta bundle is missing what it depends on: import those
            /// first, or ask for a full bundle.
            public static let importEarlierBundles = Action(rawValue: "importEarlierBundles")
            /// A clone needs a full bundle: export one on the exporting machine.
            public static let exportFullBundle = Action(rawValue: "exportFullBundle")
            /// Write a summary file on the receiving machine.
            public static let writeSummary = Action(rawValue: "writeSummary")
            /// Write the summary file again on the receiving machine.
            public static let writeSummaryAgain = Action(rawValue: "writeSummaryAgain")
            /// A clone above this machine's Argon2id ceiling: allow the
            /// expensive parameters if the vault was made with them.
            public static let allowExpensiveKDF = Action(rawValue: "allowExpensiveKDF")
            /// A newer master key whose Argon2id exceeds the vault's own:
            /// sync again adopting it, if the rekey was yours.
            public static let adoptKey = Action(rawValue: "adoptKey")
            /// A dry run cannot adopt a new master key: run without the dry run.
            public static let adoptKeyWithoutDryRun = Action(rawValue: "adoptKeyWithoutDryRun")
            /// A bundle of an older key epoch: its replica must first import
            /// a bundle of epoch ``Remedy/name``.
            public static let adoptNewerEpochFirst = Action(rawValue: "adoptNewerEpochFirst")
            /// Sync through git: ``Remedy/path`` is not a work tree; clone
            /// the sync repository there, or sync without git.
            public static let cloneSyncRepository = Action(rawValue: "cloneSyncRepository")
            /// Sync through git: add the remote ``Remedy/name`` to the
            /// repository at ``Remedy/path``, or name another.
            public static let addGitRemote = Action(rawValue: "addGitRemote")
            /// Sync through git again (``Remedy/path``): a push failed after
            /// a local commit.
            public static let syncAgain = Action(rawValue: "syncAgain")
            /// Another git sync holds the repository: wait, then try again.
            public static let waitForOtherSync = Action(rawValue: "waitForOtherSync")

            // Conflicts
            /// List the open conflicts.
            public static let listConflicts = Action(rawValue: "listConflicts")
            /// See the sides of the conflict, to choose one by number.
            public static let seeConflictSides = Action(rawValue: "seeConflictSides")
            /// Settling a name conflict: choose another name for the item.
            public static let chooseAnotherNameForConflict = Action(rawValue: "chooseAnotherNameForConflict")
        }

        public var action: Action
        /// The advice in words for anyone: what to do, naming no program
        /// or option. ``CofferError/hint`` when this remedy is set.
        public var text: String
        /// The item the action concerns, by name.
        public var item: String?
        /// The field of ``item`` the action concerns.
        public var field: String?
        /// The file or folder the action concerns.
        public var path: String?
        /// The vault file the action concerns, when it is not the one in use.
        public var vaultPath: String?
        /// Another value the action uses, as each action documents: a
        /// variable name, an attachment, a remote, a key epoch, item ids.
        public var name: String?

        public init(
            _ action: Action, _ text: String,
            item: String? = nil, field: String? = nil, path: String? = nil, vaultPath: String? = nil, name: String? = nil
        ) {
            self.action = action
            self.text = text
            self.item = item
            self.field = field
            self.path = path
            self.vaultPath = vaultPath
            self.name = name
        }

        public var description: String { text }
    }

    public var kind: Kind
    /// One line, lower-case start, no final period.
    public var message: String
    /// What to do about it, as data, when there is something to say;
    /// ``hint`` is its ``Remedy/text``. Setting it replaces a hint set
    /// as words alone.
    public var remedy: Remedy? {
        didSet { if remedy != nil { words = nil } }
    }
    /// What to do about it, in words, when there is something to say: the
    /// ``remedy``'s text, or advice given as words alone. Never names a
    /// program or option. Setting it replaces the ``remedy`` (the words
    /// no longer say what the data would).
    public var hint: String? {
        get { remedy?.text ?? words }
        set {
            words = newValue
            remedy = nil
        }
    }
    /// A hint given as words alone (no ``remedy``).
    private var words: String?
    /// The argument of the CofferKit call the error is about, as named in
    /// the call (`length`, `classes`, `count`, `separator`, `field`,
    /// `keep`), so a program can point at its own input. The message names
    /// it in words ("the length must be between …").
    public var argument: String?
    /// For ``Kind/itemNotFound``: the item name that was looked up, so a
    /// caller can add "did you mean …?" (``Vault/suggestion(forMissing:)``).
    public var missingName: String?

    public init(_ kind: Kind, _ message: String, hint: String? = nil) {
        self.kind = kind
        self.message = message
        self.words = hint
    }

    /// An error with a remedy: ``hint`` is the remedy's text.
    public init(_ kind: Kind, _ message: String, remedy: Remedy, argument: String? = nil) {
        self.kind = kind
        self.message = message
        self.remedy = remedy
        self.argument = argument
    }

    /// An error about an argument of the call (``argument``).
    public init(_ kind: Kind, _ message: String, argument: String, hint: String? = nil) {
        self.kind = kind
        self.message = message
        self.words = hint
        self.argument = argument
    }

    /// The process exit status for this error (sysexits.h, docs/exit-codes.md);
    /// 70 (internal) for a kind this CofferKit does not know.
    public var exitCode: Int32 {
        switch kind {
        case .usage: return 64
        case .badData, .ambiguousName, .invalidCredential: return 65
        case .vaultNotFound, .itemNotFound, .fileNotFound: return 66
        case .unavailable: return 69
        case .internalError: return 70
        case .vaultExists, .duplicateName, .cannotCreate: return 73
        case .ioError: return 74
        case .busy: return 75
        case .wrongPassphrase, .locked, .permissionDenied: return 77
        default: return 70
        }
    }

    public var description: String { hint.map { "\(message) (\($0))" } ?? message }
}

extension CofferError {
    static func from(_ e: StoreError) -> CofferError {
        switch e {
        case .notFound(let path):
            return CofferError(.vaultNotFound, "no vault at \(path)", remedy: Remedy(.createVault, "create a vault there, or open another path", path: path))
        case .notAVault(let path, let reason):
            return CofferError(.badData, "\(path) is not a Coffer vault: \(reason)", remedy: Remedy(.checkVaultPath, "check the vault's path", path: path))
        case .newerFormat(let path, let found, let supported):
            return CofferError(
                .badData, "\(path) has vault format \(found); this coffer reads up to \(supported)",
                hint: "upgrade coffer")
        case .alreadyExists(let path):
            return CofferError(
                .vaultExists, "a file already exists at \(path)", remedy: Remedy(.useExistingVault, "use it as it is, or choose another path", path: path))
        case .cannotCreate(let path, let reason):
            return CofferError(.cannotCreate, "cannot create \(path): \(reason)")
        case .busy(let path):
            return CofferError(.busy, "the vault \(path) is busy (another coffer is writing)", hint: "try again in a moment")
        case .permissionDenied(let path, let reason):
            return CofferError(
                .permissionDenied, "cannot read the vault \(path): \(reason)",
                remedy: Remedy(.checkPermissions, "check the owner and mode of the file and its folders, or open another path", path: path))
        case .readOnly(let path, let reason):
            return CofferError(
                .permissionDenied, "cannot write the vault \(path): \(reason)",
                hint: "make it writable (or remount the disk read-write) and run the command again; nothing was changed")
        case .diskFull(let path):
            return CofferError(
                .ioError, "no space left on \(Disk.describe(holding: path))", hint: "free some space and run the command again; nothing was changed")
        case .io(let path, let reason):
            return CofferError(
                .ioError, "cannot read or write the vault \(path): \(reason)", hint: "check the disk (dmesg); the vault is unchanged unless a write completed")
        case .damaged(let what):
            return .modifiedOutside(what)
        case .database(let message):
            return CofferError(.internalError, "vault database error: \(message)")
        }
    }

    /// The vault file fails an integrity check or holds what coffer never
    /// writes (exit 65). `what` names the inconsistency, never a value.
    package static func modifiedOutside(_ what: String) -> CofferError {
        CofferError(
            .badData, "vault file was modified outside coffer or is damaged: \(what)",
            remedy: Remedy(.verifyVault, "verify the vault for details; restore it from a backup or clone it again from a bundle"))
    }

    /// A file that could not be written: a full disk or another I/O error
    /// is ``Kind/ioError`` (74), anything else ``Kind/cannotCreate`` (73).
    public init(_ failure: FileWriteFailure) {
        switch failure.errno {
        case ENOSPC, EDQUOT:
            self.init(
                .ioError, "no space left on \(Disk.describe(holding: failure.path))", hint: "free some space and run the command again; nothing was changed")
        case EIO:
            self.init(.ioError, failure.message, hint: failure.hint)
        default:
            self.init(.cannotCreate, failure.message, hint: failure.hint)
        }
    }

    /// Runs `body`, translating storage and format errors.
    package static func wrap<T>(_ body: () throws -> T) throws(CofferError) -> T {
        do {
            return try body()
        } catch let e as CofferError {
            throw e
        } catch let e as FileWriteFailure {
            throw CofferError(e)
        } catch let e as StoreError {
            throw .from(e)
        } catch let e as CryptoError {
            throw CofferError(.badData, "vault data failed authentication (\(e))", hint: "the vault file may be damaged; restore it from a backup or a bundle")
        } catch let e as FormatError {
            throw CofferError(.badData, "vault data is malformed (\(e))")
        } catch {
            throw CofferError(.internalError, "\(error)")
        }
    }
}
