import ArgumentParser
import CofferKit
import CofferSystem
import Dispatch
import Foundation

/// `coffer ssh-agent`: an SSH agent serving the vault's ssh-key items.
struct SSHAgentCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ssh-agent",
        abstract: "Serve the vault's SSH keys to ssh and git (an SSH agent).",
        discussion: """
            Runs in the foreground, listening on a socket (mode 0600, in a 0700 folder; default \
            $XDG_RUNTIME_DIR/coffer/ssh-agent.sock) and serving every ssh-key item (or those under \
            --prefix). Keys added with ssh-add are held in memory unless --store-added. Opened \
            through the shell session, it lists no keys and signs nothing once `coffer lock` ends \
            the session. With --print-env it starts in the background and prints the lines for eval:
              eval "$(coffer ssh-agent --print-env)"
              ssh -o IdentityAgent="$SSH_AUTH_SOCK" host
            See `coffer help ssh`.
            """)

    @OptionGroup var options: VaultOptions

    @Option(help: ArgumentHelp("The socket's path.", valueName: "path"))
    var socket: String?

    @Flag(help: "Start in the background and print SSH_AUTH_SOCK and SSH_AGENT_PID lines for eval.")
    var printEnv = false

    @Option(help: ArgumentHelp("Serve only the ssh-key items whose name starts with this.", valueName: "prefix"))
    var prefix: String = ""

    @Flag(help: "Store keys added with ssh-add in the vault (under --prefix, else ssh/) instead of in memory only.")
    var storeAdded = false

    func run() throws {
        let path = socket ?? SSHAgentServer.defaultSocketPath()
        guard path.hasPrefix("/") else {
            throw CofferError(
                .usage, "--socket needs an absolute path, got '\(path)'", hint: "give a path starting with /, e.g. $XDG_RUNTIME_DIR/coffer/ssh-agent.sock")
        }
        guard path.utf8.count < 108 else {
            throw CofferError(.usage, "--socket path is longer than a Unix socket allows (107 bytes)", hint: "choose a shorter path")
        }
        if printEnv {
            try background(path)
            return
        }
        try foreground(path)
    }

    static func envLines(socket: String, pid: Int32?) -> String {
        var s = "SSH_AUTH_SOCK=\(ShellWords.quote(socket)); export SSH_AUTH_SOCK;\n"
        if let pid { s += "SSH_AGENT_PID=\(pid); export SSH_AGENT_PID;\n" }
        return s
    }

    /// Opens the vault as a `Coffer` (so a session's end is noticed),
    /// listens, and serves until a signal.
    func foreground(_ path: String) throws {
        signal(SIGPIPE, SIG_IGN)
        let unlock = CofferKit.Coffer.Unlock.automatic(passphraseFD: options.passphraseFd, passphraseFile: options.passphraseFile)
        let vaultPath = options.path
        let coffer = try Blocking.run { () async throws(CofferError) -> CofferKit.Coffer in try await CofferKit.Coffer.open(unlock, at: vaultPath) }
        let agent = SSHAgent(coffer: coffer, options: .init(prefix: prefix, storeAdded: storeAdded))
        agent.log = { (line: String) in Output.note("ssh-agent: \(line)") }
        let server = try SSHAgentServer(agent: agent, socketPath: path)
        let pidFile = path + ".pid"
        unlink(pidFile)
        try? PrivateFile.create(path: pidFile, bytes: Array("\(getpid())\n".utf8))
        let (keys, unreadable) = (try? coffer.vault.sshAgentKeys(prefix: prefix)) ?? ([], [])
        for name in unreadable { Output.warn("the key of '\(name)' cannot be read; it is not served") }
        Output.note("ssh-agent listening at \(path), serving \(keys.count) key\(keys.count == 1 ? "" : "s")")
        Output.out(Self.envLines(socket: path, pid: getpid()).trimmingCharacters(in: .newlines))
        var sources: [any DispatchSourceSignal] = []
        for sig in [SIGINT, SIGTERM, SIGHUP] {
            signal(sig, SIG_IGN)
            let s = DispatchSource.makeSignalSource(signal: sig, queue: .main)
            s.setEventHandler {
                server.stop()
                unlink(pidFile)
                Foundation.exit(0)
            }
            s.resume()
            sources.append(s)
        }
        withExtendedLifetime(sources) {
            server.start()
            dispatchMain()
        }
    }

    /// `--print-env`: checks that the vault unlocks, starts a detached
    /// `coffer ssh-agent` (the passphrase, when one is needed, through its
    /// standard input), waits until its socket answers, prints the lines.
    func background(_ path: String) throws {
        var args = [ClipboardTool.executablePath(), "ssh-agent", "--socket", path]
        if let v = options.vault { args += ["--vault", v] }
        if !prefix.isEmpty { args += ["--prefix", prefix] }
        if storeAdded { args.append("--store-added") }
        var input: [UInt8] = []
        if options.unlocksWithSession {
            _ = try options.unlock()
        } else {
            let secret = try options.passphrase()
            _ = try options.openFile().unlock(passphrase: secret)
            input = secret.revealedBytes()
            args += ["--passphrase-fd", "0"]
        }
        let pidFile = path + ".pid"
        unlink(pidFile)
        let child: PipedProcess.Detached
        do { child = try PipedProcess.spawnDetached(args, environment: nil) } catch {
            throw CofferError(.internalError, "cannot start the agent: \(error)")
        }
        child.send(input)
        input.wipe()
        // Argon2id runs again in the child: wait up to 30 s.
        let deadline = Date().addingTimeInterval(30)
        while Date() < deadline {
            if let pidText = try? String(contentsOfFile: pidFile, encoding: .utf8), let pid = Int32(pidText.trimmingCharacters(in: .whitespacesAndNewlines)),
                let c = try? UnixConnection.connect(path: path)
            {
                c.close()
                FileHandle.standardOutput.write(Data(Self.envLines(socket: path, pid: pid).utf8))
                Output.note("ssh-agent started in the background (pid \(pid)); stop it with kill \(pid)")
                return
            }
            usleep(20_000)
        }
        throw CofferError(.internalError, "the agent did not start within 30 s", hint: "run `coffer ssh-agent` in the foreground to see why")
    }
}

/// Runs async CofferKit work from a synchronous command.
enum Blocking {
    final class Box<T>: @unchecked Sendable {
        var result: Result<T, CofferError>?
    }

    static func run<T>(_ body: @escaping @Sendable () async throws(CofferError) -> T) throws(CofferError) -> T {
        let box = Box<T>()
        let done = DispatchSemaphore(value: 0)
        Task {
            do throws(CofferError) { box.result = .success(try await body()) } catch { box.result = .failure(error) }
            done.signal()
        }
        done.wait()
        return try box.result!.get()
    }
}
