import ArgumentParser
import CofferCrypto
import CofferKit
import CofferSystem
import Foundation

#if canImport(Glibc)
import Glibc
#endif

struct Run: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a command with coffer:// references in its environment replaced by secrets.",
        discussion: """
            Every environment variable whose value is a coffer:// reference (inherited, from \
            --env-file, or from --env) is replaced by the secret before CMD starts; secrets reach \
            CMD only through its environment. Examples:
              OPENAI_API_KEY=coffer://work/openai coffer run -- python app.py
              coffer run --env-file .env.refs -- ./deploy.sh
              coffer run --env PGPASSWORD=coffer://db/prod/password --mask -- psql
            stdin, stdout and stderr pass through; when masking (--mask, and by default when stdout \
            or stderr is a terminal; --no-mask turns it off) stdout and stderr go through a filter \
            that prints <concealed> instead of any resolved value. A reference may use ${NAME} for \
            an environment variable: coffer://db/${APP_ENV}/password. SIGINT, SIGTERM, SIGHUP, \
            SIGQUIT, SIGUSR1, SIGUSR2 and SIGWINCH sent to coffer are forwarded to CMD. The exit \
            status is CMD's (128+N when signal N killed it). Before CMD starts: 64 usage, 65 \
            malformed or ambiguous reference or bad --env-file, 66 unknown item or field or missing \
            --env-file, 77 locked, 126 CMD not executable, 127 CMD not found. See \
            `coffer help references`.
            """)

    @OptionGroup var options: VaultOptions

    @Option(name: .customLong("env-file"), help: ArgumentHelp("Read variables from a dotenv file (repeatable; later files win).", valueName: "file"))
    var envFiles: [String] = []

    @Option(name: .customLong("env"), help: ArgumentHelp("Set a variable, usually to a reference (repeatable; wins over --env-file).", valueName: "NAME=REF"))
    var envs: [String] = []

    @Flag(
        inversion: .prefixedNo,
        help:
            "Replace resolved secrets in CMD's stdout and stderr with <concealed> (default: on when stdout or stderr is a terminal; --no-mask for a program that needs the terminal itself)."
    )
    var mask: Bool?

    @Argument(parsing: .postTerminator, help: ArgumentHelp("The command and its arguments, after --.", valueName: "CMD"))
    var command: [String] = []

    @Flag(
        help:
            "Pass COFFER_SESSION, COFFER_PASSPHRASE and COFFER_IDENTITY_FILE on to CMD (by default they are removed, so CMD gets only the secrets its references name)."
    )
    var keepSession = false

    /// The usage rules argument-parser cannot express, checked first in
    /// ``run()`` so that they fail like every other usage error
    /// (`coffer: error:` and exit 64, docs/exit-codes.md).
    func checkUsage() throws(CofferError) {
        guard !command.isEmpty else {
            throw CofferError(.usage, "give the command to run after --, e.g. coffer run -- env", hint: "see `coffer run --help`")
        }
    }

    func run() throws {
        try checkUsage()
        // 1. The environment CMD would get, in precedence order.
        var env = ProcessInfo.processInfo.environment
        // CMD gets the secrets it was given, not the whole vault: the
        // passphrase and the session token stay with coffer unless asked.
        if !keepSession {
            env["COFFER_PASSPHRASE"] = nil
            env["COFFER_SESSION"] = nil
            env[Unlocking.identityVariable] = nil
        }
        var origin: [String: String] = [:]
        for file in envFiles {
            let text = try ReferenceResolution.readText(file, what: "env file")
            for e in try Dotenv.parse(text, source: file) {
                env[e.name] = e.value
                origin[e.name] = "\(file):\(e.line)"
            }
        }
        for assignment in envs {
            guard let eq = assignment.firstIndex(of: "="), Dotenv.isValidName(assignment[..<eq]) else {
                throw CofferError(
                    .usage, "invalid --env '\(assignment.prefix(40))': expected NAME=REF with NAME made of letters, digits and '_'",
                    hint: "e.g. --env OPENAI_API_KEY=coffer://work/openai")
            }
            let name = String(assignment[..<eq])
            env[name] = String(assignment[assignment.index(after: eq)...])
            origin[name] = "--env"
        }

        // 2. Parse every reference before asking for anything.
        var refOf: [String: Reference] = [:]
        for (name, value) in env where Reference.isReference(value) {
            do throws(CofferError) {
                refOf[name] = try Reference(parsing: value, environment: env)
            } catch {
                var e = error
                e.message = "variable \(name)\(origin[name].map { " (\($0))" } ?? ""): \(error.message)"
                throw e
            }
        }

        // 3. One unlock for all of them; the vault is closed again before CMD starts.
        let names = refOf.keys.sorted()
        let resolved = try ReferenceResolution.resolve(names.map { refOf[$0]! }, options: options) { ref in
            let users = names.filter { refOf[$0] == ref }
            return "cannot set \(users.joined(separator: ", "))"
        }
        var secrets: [String] = []
        for name in names {
            let value = resolved[refOf[name]!]!.value
            guard !value.utf8.contains(0) else {
                throw CofferError(
                    .badData, "cannot set \(name): the value of \(refOf[name]!.text) contains a NUL byte, which an environment variable cannot hold")
            }
            env[name] = value
            secrets.append(value)
        }

        // 4. Run it.
        let environment = env.map { "\($0.key)=\($0.value)" }
        let termination: ChildTermination
        // CMD creates its files with the user's umask, not coffer's 077.
        umask(originalUmask)
        defer { umask(0o077) }
        do {
            // As `op run` does: a secret a command prints to the user's
            // terminal is concealed unless asked otherwise; output to a file
            // or a pipe is left alone unless --mask says so.
            let masking = mask ?? (isatty(1) == 1 || isatty(2) == 1)
            if masking && !secrets.isEmpty {
                var maskers: [Int32: StreamMasker] = [1: StreamMasker(secrets: secrets), 2: StreamMasker(secrets: secrets)]
                termination = try ChildProcess.run(command, environment: environment) { fd, chunk in
                    if let chunk { return maskers[fd]!.feed(chunk) }
                    return maskers[fd]!.finish()
                }
            } else {
                termination = try ChildProcess.run(command, environment: environment)
            }
        } catch {
            switch error {
            case .notFound(let c):
                Output.err("coffer: error: command not found: \(c)")
                Output.err("coffer: hint: check the name and $PATH, or give a path")
                Glibc.exit(127)
            case .notExecutable(let c, let why):
                Output.err("coffer: error: cannot execute \(c): \(why)")
                Glibc.exit(126)
            case .spawnFailed(let c, let why):
                throw CofferError(.internalError, "cannot start \(c): \(why)")
            }
        }
        Glibc.exit(termination.status)
    }
}
