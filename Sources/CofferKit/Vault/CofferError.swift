import CofferCrypto
import CofferStore
import CofferSync
import CofferSystem
#if canImport(Glibc)
import Glibc
#endif

/// Every failure CofferKit reports: what kind it is (for code that reacts
/// to it), a one-line message saying what went wrong, and a hint saying
/// what to do. Messages never contain a secret.
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

    public var kind: Kind
    /// One line, lower-case start, no final period.
    public var message: String
    /// What to do about it, when there is something to say.
    public var hint: String?
    /// For ``Kind/itemNotFound``: the item name that was looked up, so a
    /// caller can add "did you mean …?" (``Vault/suggestion(forMissing:)``).
    public var missingName: String?

    public init(_ kind: Kind, _ message: String, hint: String? = nil) {
        self.kind = kind
        self.message = message
        self.hint = hint
    }

    /// The process exit status for this error (sysexits.h, docs/exit-codes.md);
    /// 70 (internal) for a kind this CofferKit does not know.
    public var exitCode: Int32 {
        switch kind {
        case .usage: return 64
        case .badData, .ambiguousName, .invalidCredential: return 65
        case .vaultNotFound, .itemNotFound, .fileNotFound: return 66
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
            return CofferError(.vaultNotFound, "no vault at \(path)", hint: "create one with `coffer init`, or pass --vault PATH")
        case .notAVault(let path, let reason):
            return CofferError(.badData, "\(path) is not a Coffer vault: \(reason)", hint: "check the --vault path")
        case .newerFormat(let path, let found, let supported):
            return CofferError(
                .badData, "\(path) has vault format \(found); this coffer reads up to \(supported)",
                hint: "upgrade coffer")
        case .alreadyExists(let path):
            return CofferError(.vaultExists, "a file already exists at \(path)", hint: "use it as it is, or choose another path with --vault PATH")
        case .cannotCreate(let path, let reason):
            return CofferError(.cannotCreate, "cannot create \(path): \(reason)")
        case .busy(let path):
            return CofferError(.busy, "the vault \(path) is busy (another coffer is writing)", hint: "try again in a moment")
        case .permissionDenied(let path, let reason):
            return CofferError(.permissionDenied, "cannot read the vault \(path): \(reason)", hint: "check the owner and mode of the file and its folders (ls -l), or pass --vault PATH")
        case .readOnly(let path, let reason):
            return CofferError(.permissionDenied, "cannot write the vault \(path): \(reason)", hint: "make it writable (or remount the disk read-write) and run the command again; nothing was changed")
        case .diskFull(let path):
            return CofferError(.ioError, "no space left on \(Disk.describe(holding: path))", hint: "free some space and run the command again; nothing was changed")
        case .io(let path, let reason):
            return CofferError(.ioError, "cannot read or write the vault \(path): \(reason)", hint: "check the disk (dmesg); the vault is unchanged unless a write completed")
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
            hint: "run `coffer verify` for details; restore the vault from a backup or clone it again from a bundle")
    }

    /// A file that could not be written: a full disk or another I/O error
    /// is ``Kind/ioError`` (74), anything else ``Kind/cannotCreate`` (73).
    public init(_ failure: FileWriteFailure) {
        switch failure.errno {
        case ENOSPC, EDQUOT:
            self.init(.ioError, "no space left on \(Disk.describe(holding: failure.path))", hint: "free some space and run the command again; nothing was changed")
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
