import CofferSystem
import Foundation

extension Coffer {
    /// How ``Coffer/open(_:at:)`` unlocks a vault: an ordered list of
    /// sources, tried in turn.
    ///
    /// ``automatic`` does what the `coffer` command does:
    /// 1. the shell session in `$COFFER_SESSION` (after
    ///    `eval "$(coffer unlock)"`), when set. A session that is set but
    ///    cannot be used (expired, locked, of another vault) is an error
    ///    (``CofferError/Kind/locked``), never a silent fallback to a prompt;
    /// 2. the passphrase in `$COFFER_PASSPHRASE` (the least safe source:
    ///    other processes of the user may read a process's environment);
    /// 3. the terminal, asking without echo.
    ///
    /// ``automatic(passphraseFD:passphraseFile:prompt:)`` puts a file
    /// descriptor or a file first and then skips the session, as
    /// `coffer --passphrase-fd N` / `--passphrase-file F` do.
    public struct Unlock: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
        enum Step: Sendable, Equatable {
            /// The session of this token; nil: of `$COFFER_SESSION`, skipped when unset.
            case session(token: String?)
            case fileDescriptor(Int32)
            case file(String)
            /// An environment variable, skipped when unset.
            case environment(String)
            case terminal(prompt: String)
        }

        let steps: [Step]

        /// The sources in order, with a session token shown as `…`.
        public var description: String {
            steps.map { step -> String in
                switch step {
                case .session(let token): return token == nil ? "session($COFFER_SESSION)" : "session(token: …)"
                case .fileDescriptor(let fd): return "fileDescriptor(\(fd))"
                case .file(let path): return "file(\(path))"
                case .environment(let name): return "environment($\(name))"
                case .terminal: return "terminal"
                }
            }.joined(separator: " → ")
        }

        public var debugDescription: String { "Coffer.Unlock(\(description))" }

        /// No children: `dump` and debuggers must not show a token.
        public var customMirror: Mirror { Mirror(self, children: [:]) }

        /// Session, then `$COFFER_PASSPHRASE`, then the terminal.
        public static let automatic = Unlock(steps: [
            .session(token: nil), .environment("COFFER_PASSPHRASE"), .terminal(prompt: "Passphrase: "),
        ])

        /// Like ``automatic``, with the passphrase sources of the `coffer`
        /// command line: when `passphraseFD` or `passphraseFile` is given
        /// it is read (the first of them), and the session is not used.
        public static func automatic(passphraseFD: Int32? = nil, passphraseFile: String? = nil, prompt: String = "Passphrase: ") -> Unlock {
            if let fd = passphraseFD { return Unlock(steps: [.fileDescriptor(fd)]) }
            if let file = passphraseFile { return Unlock(steps: [.file(file)]) }
            return Unlock(steps: [.session(token: nil), .environment("COFFER_PASSPHRASE"), .terminal(prompt: prompt)])
        }

        /// The shell session in `$COFFER_SESSION` only.
        public static let session = Unlock(steps: [.session(token: nil)])

        /// The session of `token` (a `COFFER_SESSION` value your program
        /// received some other way).
        public static func session(token: String) -> Unlock { Unlock(steps: [.session(token: token)]) }

        /// The passphrase in the environment variable `name`.
        public static func environment(_ name: String = "COFFER_PASSPHRASE") -> Unlock { Unlock(steps: [.environment(name)]) }

        /// The passphrase read from the open file descriptor `fd` to its
        /// end, less one trailing newline.
        public static func fileDescriptor(_ fd: Int32) -> Unlock { Unlock(steps: [.fileDescriptor(fd)]) }

        /// The passphrase in the file at `path` (its whole content, less
        /// one trailing newline).
        public static func file(_ path: String) -> Unlock { Unlock(steps: [.file(path)]) }

        /// The passphrase asked on the terminal, without echo.
        public static func terminal(prompt: String = "Passphrase: ") -> Unlock { Unlock(steps: [.terminal(prompt: prompt)]) }

        /// Tries `self`'s sources, then `other`'s.
        public func then(_ other: Unlock) -> Unlock { Unlock(steps: steps + other.steps) }

        /// Unlocks `file` with the first source that is present. Blocking:
        /// reads input and runs Argon2id. A vault unlocked through a
        /// session comes with the session, which the ``Coffer`` watches.
        func unlock(_ file: VaultFile, environment: [String: String]) throws(CofferError) -> (vault: Vault, session: SessionLease?) {
            for step in steps {
                switch step {
                case .session(let token):
                    guard let token = token ?? environment[Session.environmentVariable], !token.isEmpty else { continue }
                    let (vault, lease) = try Session.unlockLeased(file: file, token: token, directory: .resolve(environment: environment))
                    return (vault, lease)
                case .environment(let name):
                    guard let secret = SecretInput.environment(name) else { continue }
                    return (try file.unlock(passphrase: secret), nil)
                case .fileDescriptor(let fd):
                    return (try file.unlock(passphrase: try CofferError.reading { () throws(SecretInputError) in try SecretInput.read(fd: fd) }), nil)
                case .file(let path):
                    return (try file.unlock(passphrase: try CofferError.reading { () throws(SecretInputError) in try SecretInput.read(path: path) }), nil)
                case .terminal(let prompt):
                    return (try file.unlock(passphrase: try CofferError.reading { () throws(SecretInputError) in try SecretInput.prompt(prompt) }), nil)
                }
            }
            throw CofferError(
                .locked, "no way to unlock \(file.path): no session and no passphrase was given",
                remedy: .init(.givePassphrase, "unlock a shell session, or set COFFER_PASSPHRASE"))
        }
    }
}
