import CofferSystem
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// The SSH agent's socket: a Unix stream socket, mode 0600 in a 0700
/// folder, serving ``SSHAgent`` to connections of this user only
/// (`SO_PEERCRED`; another uid is refused), each on a thread of its own.
/// Messages are length-prefixed (`uint32`); one longer than
/// ``maxMessage`` is answered `SSH_AGENT_FAILURE` and its connection
/// closed, a connection that ends mid-message is closed, and nothing a
/// client does stops the server.
public final class SSHAgentServer: @unchecked Sendable {
    /// The largest request accepted (OpenSSH's own agent: 256 KiB).
    public static let maxMessage = 256 * 1024
    /// The most connections served at once; more are closed at once.
    public static let maxConnections = 512

    public let agent: SSHAgent
    public let socketPath: String
    private let listener: UnixListener
    private let count = NSLock()
    private var active = 0
    private var acceptThread: Thread?

    /// Listens at `socketPath`, creating its folder (mode 0700) when it
    /// does not exist.
    /// - Throws: ``CofferError/Kind/cannotCreate`` when the socket cannot
    ///   be made, or its folder is another user's or open to others.
    public init(agent: SSHAgent, socketPath: String) throws(CofferError) {
        self.agent = agent
        self.socketPath = socketPath
        let folder = (socketPath as NSString).deletingLastPathComponent
        if !folder.isEmpty {
            switch PrivateFile.isPrivateDirectory(folder) {
            case nil:
                do { try PrivateFile.makeDirectory(folder) } catch {
                    throw CofferError(.cannotCreate, "cannot create the agent's folder \(folder): \(error)")
                }
            case false?:
                throw CofferError(
                    .cannotCreate, "the agent's folder \(folder) is not private (it must be this user's, mode 0700)",
                    hint: "choose a socket path in a folder only you can enter, or chmod 700 it")
            case true?:
                break
            }
        }
        do { listener = try UnixListener(path: socketPath) } catch {
            if error.code == EADDRINUSE {
                throw CofferError(.cannotCreate, "an agent is already listening at \(socketPath)", hint: "stop it, or choose another socket path")
            }
            throw CofferError(.cannotCreate, "cannot listen at \(socketPath): \(error)")
        }
    }

    /// Serves connections until ``stop()``; blocks.
    public func run() {
        while let connection = listener.accept() {
            count.lock()
            let full = active >= Self.maxConnections
            if !full { active += 1 }
            count.unlock()
            if full {
                connection.close()
                continue
            }
            let thread = Thread { [self] in
                serve(connection)
                count.lock()
                active -= 1
                count.unlock()
            }
            thread.stackSize = 512 * 1024
            thread.start()
        }
    }

    /// Runs ``run()`` on a thread of its own.
    public func start() {
        let t = Thread { [self] in run() }
        t.start()
        acceptThread = t
    }

    /// Stops accepting and removes the socket file. Connections being
    /// served finish their current request.
    public func stop() {
        listener.close()
    }

    /// One connection: requests in order until the client closes.
    func serve(_ connection: UnixConnection) {
        defer { connection.close() }
        guard let uid = connection.peerUID, uid == geteuid() else {
            agent.log("refused a connection from another user (uid \(connection.peerUID.map(String.init) ?? "unknown"))")
            return
        }
        var state = SSHAgent.ConnectionState()
        while let header = connection.read(exactly: 4) {
            let length = Int(header[0]) << 24 | Int(header[1]) << 16 | Int(header[2]) << 8 | Int(header[3])
            if length > Self.maxMessage {
                connection.write(Self.frame([SSHAgent.Message.failure]))
                return
            }
            guard let body = connection.read(exactly: length) else { return }
            let reply = agent.handle(body, state: &state)
            guard connection.write(Self.frame(reply)) else { return }
        }
    }

    static func frame(_ body: [UInt8]) -> [UInt8] {
        let n = UInt32(body.count)
        return [UInt8(n >> 24), UInt8(n >> 16 & 0xff), UInt8(n >> 8 & 0xff), UInt8(n & 0xff)] + body
    }

    /// `$XDG_RUNTIME_DIR/coffer/ssh-agent.sock`, else
    /// `/tmp/coffer-UID/ssh-agent.sock`.
    public static func defaultSocketPath(environment: [String: String] = ProcessInfo.processInfo.environment) -> String {
        if let runtime = environment["XDG_RUNTIME_DIR"], runtime.hasPrefix("/") {
            return runtime + "/coffer/ssh-agent.sock"
        }
        return "/tmp/coffer-\(geteuid())/ssh-agent.sock"
    }
}
