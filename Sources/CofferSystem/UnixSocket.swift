internal import CCofferSys
import Foundation

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A failure of a Unix socket call, with errno's text.
public struct UnixSocketError: Error, Sendable, Equatable, CustomStringConvertible {
    public var call: String
    public var code: Int32
    public var description: String { "\(call): \(String(cString: strerror(code)))" }

    init(_ call: String, _ code: Int32 = errno) {
        self.call = call
        self.code = code
    }
}

/// A listening Unix stream socket (the SSH agent's): created mode 0600,
/// whatever the umask, in a folder the caller made private.
public final class UnixListener: @unchecked Sendable {
    public let path: String
    private let fd: Int32
    private let closed = NSLock()
    private var isClosed = false

    /// Binds and listens at `path`. A socket left at the path by an agent
    /// that died is replaced; a live one (it accepts a connection) or any
    /// other file is not (`EADDRINUSE`, `EEXIST`).
    public init(path: String, backlog: Int32 = 128) throws(UnixSocketError) {
        self.path = path
        var addr = try UnixListener.address(path)
        var st = stat()
        if lstat(path, &st) == 0 {
            guard (st.st_mode & S_IFMT) == S_IFSOCK else { throw UnixSocketError("bind \(path)", EEXIST) }
            if let live = try? UnixConnection.connect(path: path) {
                live.close()
                throw UnixSocketError("bind \(path)", EADDRINUSE)
            }
            unlink(path)
        }
        let s = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard s >= 0 else { throw UnixSocketError("socket") }
        // The socket file is created with the umask's mode: 0177 leaves
        // 0600, so no other user can connect even for an instant.
        let old = umask(0o177)
        let rc = withUnsafePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(s, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        let bindErrno = errno
        umask(old)
        guard rc == 0 else {
            Glibc.close(s)
            throw UnixSocketError("bind \(path)", bindErrno)
        }
        chmod(path, 0o600)
        guard listen(s, backlog) == 0 else {
            let code = errno
            Glibc.close(s)
            unlink(path)
            throw UnixSocketError("listen", code)
        }
        fd = s
    }

    static func address(_ path: String) throws(UnixSocketError) -> sockaddr_un {
        var addr = sockaddr_un()
        addr.sun_family = sa_family_t(AF_UNIX)
        let bytes = Array(path.utf8)
        let capacity = MemoryLayout.size(ofValue: addr.sun_path)
        guard !bytes.isEmpty, bytes.count < capacity, !bytes.contains(0) else { throw UnixSocketError("socket path", ENAMETOOLONG) }
        withUnsafeMutableBytes(of: &addr.sun_path) { raw in
            for (i, b) in bytes.enumerated() { raw[i] = b }
        }
        return addr
    }

    /// The next connection; nil once ``close()`` was called.
    public func accept() -> UnixConnection? {
        while true {
            let c = Glibc.accept(fd, nil, nil)
            if c >= 0 {
                _ = fcntl(c, F_SETFD, FD_CLOEXEC)
                return UnixConnection(fd: c)
            }
            let code = errno
            closed.lock()
            let done = isClosed
            closed.unlock()
            if done { return nil }
            if code == EINTR || code == ECONNABORTED || code == EMFILE || code == ENFILE || code == ENOBUFS || code == ENOMEM {
                if code != EINTR && code != ECONNABORTED { usleep(10_000) }
                continue
            }
            return nil
        }
    }

    /// Stops listening (a blocked ``accept()`` returns nil) and removes the
    /// socket file.
    public func close() {
        closed.lock()
        defer { closed.unlock() }
        guard !isClosed else { return }
        isClosed = true
        shutdown(fd, Int32(SHUT_RDWR))
        Glibc.close(fd)
        unlink(path)
    }

    deinit { close() }
}

/// One connected Unix stream socket.
public final class UnixConnection: @unchecked Sendable {
    public let fd: Int32
    private var isClosed = false

    init(fd: Int32) { self.fd = fd }

    /// Connects to the socket at `path`.
    public static func connect(path: String) throws(UnixSocketError) -> UnixConnection {
        var addr = try UnixListener.address(path)
        let s = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard s >= 0 else { throw UnixSocketError("socket") }
        let rc = withUnsafePointer(to: &addr) { p in
            p.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(s, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard rc == 0 else {
            let code = errno
            Glibc.close(s)
            throw UnixSocketError("connect \(path)", code)
        }
        return UnixConnection(fd: s)
    }

    /// The user id of the peer process (SO_PEERCRED), or nil.
    public var peerUID: UInt32? {
        var uid: UInt32 = 0
        return CCofferSys_peer_uid(fd, &uid) == 0 ? uid : nil
    }

    /// Exactly `count` bytes, or nil at end of stream or on an error
    /// (`count` 0: an empty array).
    public func read(exactly count: Int) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: count)
        var got = 0
        while got < count {
            let n = out.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress! + got, count - got) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return nil }
            got += n
        }
        return out
    }

    /// Writes all of `bytes`; false when the peer is gone. Never raises
    /// SIGPIPE (MSG_NOSIGNAL).
    @discardableResult
    public func write(_ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes.withUnsafeBytes { send(fd, $0.baseAddress! + sent, bytes.count - sent, Int32(MSG_NOSIGNAL)) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { return false }
            sent += n
        }
        return true
    }

    /// Sets a receive time-out (0: none).
    public func setReceiveTimeout(seconds: Int) {
        var tv = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
    }

    public func close() {
        guard !isClosed else { return }
        isClosed = true
        Glibc.close(fd)
    }

    deinit { close() }
}
