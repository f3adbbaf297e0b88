#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Byte-level helpers that need raw pointers, kept in this target with
/// every other `Unsafe` use so that the rest of Coffer stays safe code.
public enum Bytes {
    /// Reads up to `count` bytes from `fd`, retrying on `EINTR` and short
    /// reads; fewer only at end of file. Throws the `errno` of a failed
    /// `read`.
    public static func read(fd: Int32, count: Int) throws(Errno) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        var got = 0
        while got < count {
            let n = out.withUnsafeMutableBytes { buf in Glibc.read(fd, buf.baseAddress! + got, count - got) }
            if n < 0 {
                if errno == EINTR { continue }
                throw Errno(code: errno)
            }
            if n == 0 { break }
            got += n
        }
        if got < count { out.removeLast(count - got) }
        return out
    }

    /// Writes all of `bytes` to `fd`, retrying on `EINTR` and short
    /// writes. Throws the `errno` of a failed `write`.
    public static func write(fd: Int32, _ bytes: [UInt8]) throws(Errno) {
        var done = 0
        while done < bytes.count {
            let n = bytes.withUnsafeBytes { buf in Glibc.write(fd, buf.baseAddress! + done, bytes.count - done) }
            if n < 0 {
                if errno == EINTR { continue }
                throw Errno(code: errno)
            }
            done += n
        }
    }

    /// A failed system call.
    public struct Errno: Error, Sendable, Equatable, CustomStringConvertible {
        public var code: Int32
        public var description: String { String(cString: strerror(code)) }
    }
}
