import ArgumentParser
import CofferKit
import CofferSystem
import Foundation

#if canImport(Glibc)
import Glibc
#endif

struct GitCredentialCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "git-credential",
        abstract: "Serve git as its credential helper (get, store, erase).",
        discussion: """
            Set up with `git config --global credential.helper coffer` (`make install` installs \
            the git-credential-coffer wrapper git runs). Reads git's key=value lines on standard \
            input. get prints username= and password= of the login item whose url matches \
            protocol, host (and path with credential.useHttpPath), or of the item git/HOST; \
            store saves what git confirmed worked (a normal write, so it syncs); erase deletes \
            the matching git/ item. Without a session, passphrase source or terminal it prints \
            nothing and exits 0, so git asks its next helper (`coffer help git-credential`).
            """)

    @OptionGroup var options: VaultOptions

    @Argument(help: ArgumentHelp("get, store or erase (as git calls it).", valueName: "action"))
    var action: String

    static let actions = ["get", "store", "erase"]

    func run() throws {
        guard GitCredentialCommand.actions.contains(action) else {
            throw CofferError(
                .usage, "unknown git credential action '\(action)'",
                hint: "git calls the helper with get, store or erase; set it up with `git config --global credential.helper coffer`")
        }
        let request = try GitCredentialRequest.parse(try GitCredentialCommand.readRequest())
        guard request.host != nil else {
            // Nothing to match (e.g. a certificate passphrase request).
            return
        }
        // No session, no passphrase source, no terminal (or no vault): say
        // nothing, so git goes on to its next helper or prompt.
        guard let vault = try unlockIfPossible() else { return }
        switch action {
        case "get":
            guard let match = try vault.gitCredential(for: request) else { return }
            guard !match.username.contains("\n"), !match.password.contains("\n") else {
                throw CofferError(
                    .badData, "item '\(match.itemName)' has a username or password with a line break, which git cannot take",
                    hint: "fix it with `coffer edit \(match.itemName)`")
            }
            var out = ""
            if !match.username.isEmpty { out += "username=\(match.username)\n" }
            out += "password=\(match.password)\n"
            Output.stdout(Data(out.utf8))
        case "store":
            guard request.username != nil, request.password != nil, request.protocol != nil else { return }
            if case .created(let name) = try vault.storeGitCredential(request) {
                Output.note("stored the git credential for \(request.host ?? "") as '\(name)'")
            }
        default:
            let result = try vault.eraseGitCredential(request)
            for name in result.keptOutsideGit {
                Output.warn("git rejected the password of '\(name)'; not erasing an item outside git/ (update it with `coffer edit \(name)`)")
            }
        }
    }

    func unlockIfPossible() throws(CofferError) -> Vault? {
        let result: Result<Vault, CofferError>
        do { result = .success(try options.unlock()) } catch { result = .failure(error) }
        switch result {
        case .success(let v): return v
        case .failure(let e):
            if e.kind == .locked || e.kind == .vaultNotFound { return nil }
            throw e
        }
    }

    /// Standard input up to a blank line or its end, at most
    /// ``GitCredentialRequest/maximumSize`` + 1 bytes (so the parser can
    /// refuse more).
    static func readRequest() throws(CofferError) -> [UInt8] {
        var bytes: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while bytes.count <= GitCredentialRequest.maximumSize {
            let n = buffer.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
            if n < 0 {
                if errno == EINTR { continue }
                throw CofferError(.ioError, "cannot read git's request from standard input: \(String(cString: strerror(errno)))")
            }
            if n == 0 { break }
            bytes += buffer[0..<n]
            if bytes.count >= 2, bytes.suffix(2) == [10, 10] || bytes == [10] || bytes.suffix(4) == [13, 10, 13, 10] { break }
        }
        return bytes
    }
}
