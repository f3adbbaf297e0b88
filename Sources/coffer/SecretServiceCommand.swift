import ArgumentParser
import CofferKit
import CofferSecretService
import Foundation

struct SecretServiceCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "secret-service",
        abstract: "Serve the desktop's Secret Service (org.freedesktop.secrets) from the vault.",
        discussion: """
            Runs in the foreground on the session bus and answers libsecret, secret-tool, Python's \
            keyring and every other Secret Service client. What they store becomes an ordinary item \
            under apps/ (label, attributes and content type as fields), which syncs like any other; \
            `coffer get` reads it and an edit by `coffer edit` or a sync is what they read next. \
            Unlocks with the shell session or a passphrase option. If another provider (gnome-keyring, \
            KWallet, KeePassXC) owns the name, exits 75 naming it; --replace takes the name. \
            See `coffer help secret-service`.
            """)

    @OptionGroup var options: VaultOptions

    @Flag(help: "Take the name org.freedesktop.secrets from the process that owns it.")
    var replace = false

    @Flag(help: "Start locked: ask for the passphrase with a pinentry ($COFFER_PINENTRY, else pinentry) when a client first unlocks.")
    var locked = false

    @Flag(help: "Print a line on stderr for each request: which program read, created, changed or deleted which item (names only).")
    var log = false

    func run() throws {
        let file = try options.openFile()
        if locked, options.passphraseFd != nil || options.passphraseFile != nil {
            throw CofferError(.usage, "--locked cannot be combined with a passphrase option", hint: "give one: --locked, or the passphrase")
        }
        let vault = locked ? nil : try options.unlock(file)
        let logger: ((String) -> Void)? = log ? { Output.note("secret-service: \($0)") } : nil
        let daemon: SecretServiceDaemon
        do {
            daemon = try SecretServiceDaemon(
                file: file, vault: vault, sessionToken: !locked && options.unlocksWithSession ? SessionEnvironment.token : nil, replace: replace, log: logger,
                notice: { Output.note("secret-service: \($0)") })
        } catch {
            throw Self.words(error)
        }
        SecretServiceDaemon.installSignalHandlers()
        Output.note(
            "secret-service: serving \(file.path)\(locked ? " (locked)" : "") as \(SecretServiceDaemon.busName) (items under \(Vault.secretServiceDefaultFolder)/)"
        )
        let reason: String
        do {
            reason = try daemon.run()
        } catch {
            throw Self.words(error)
        }
        Output.note("secret-service: \(reason); stopped")
    }

    static func words(_ failure: SecretServiceStartFailure) -> CofferError {
        switch failure {
        case .noBus(let text):
            return CofferError(
                .unavailable, "cannot connect to the session bus: \(text)",
                hint: "run it in a desktop session, or under `dbus-run-session -- coffer secret-service`")
        case .nameTaken(let pid, let executable):
            let holder = pid.map { "process \($0)" + (executable.map { " (\($0))" } ?? "") } ?? "another process"
            return CofferError(
                .busy, "\(SecretServiceDaemon.busName) is owned by \(holder)",
                hint: "stop that provider (for gnome-keyring: `systemctl --user mask --now gnome-keyring-daemon.service gnome-keyring-daemon.socket`), "
                    + "or take the name with `coffer secret-service --replace`")
        case .bus(let text):
            return CofferError(.unavailable, "the session bus failed: \(text)", hint: "start the service again")
        }
    }
}
