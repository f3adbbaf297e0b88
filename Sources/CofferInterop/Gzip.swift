import Foundation

#if canImport(CZlib)
import CZlib
#endif

/// gzip (RFC 1952) decompression through the system zlib, for KeePass
/// binaries stored with `Compressed="True"`. zlib checks the header, the
/// CRC-32 and the length in the trailer; the output is bounded, so a small
/// "zip bomb" cannot fill memory.
enum Gzip {
    enum Failure: Error, Equatable {
        /// Not a gzip stream, or a damaged one; says why.
        case malformed(String)
        /// It decompresses to more than the limit.
        case tooLarge
    }

    /// The decompressed bytes of `input`, at most `limit` of them.
    static func decompress(_ input: [UInt8], limit: Int) -> Result<[UInt8], Failure> {
        guard !input.isEmpty else { return .failure(.malformed("empty gzip data")) }
        var stream = z_stream()
        // 16 + MAX_WBITS: a gzip wrapper (not zlib's), checked by zlib.
        guard inflateInit2_(&stream, 16 + MAX_WBITS, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            return .failure(.malformed("zlib cannot start"))
        }
        defer { inflateEnd(&stream) }
        let chunk = 64 * 1024
        var out: [UInt8] = []
        out.reserveCapacity(min(limit + 1, max(chunk, input.count * 3)))
        var buffer = [UInt8](repeating: 0, count: chunk)
        return input.withUnsafeBufferPointer { (source: UnsafeBufferPointer<UInt8>) -> Result<[UInt8], Failure> in
            guard let base = source.baseAddress else { return .failure(.malformed("empty gzip data")) }
            stream.next_in = UnsafeMutablePointer(mutating: base)
            guard let available = UInt32(exactly: source.count) else { return .failure(.malformed("gzip data larger than 4 GiB")) }
            stream.avail_in = available
            while true {
                let status: Int32 = buffer.withUnsafeMutableBufferPointer { b in
                    stream.next_out = b.baseAddress
                    stream.avail_out = UInt32(b.count)
                    return inflate(&stream, Z_NO_FLUSH)
                }
                let produced = chunk - Int(stream.avail_out)
                if out.count + produced > limit { return .failure(.tooLarge) }
                out.append(contentsOf: buffer[0..<produced])
                switch status {
                case Z_STREAM_END:
                    guard stream.avail_in == 0 else { return .failure(.malformed("data after the end of the gzip stream")) }
                    return .success(out)
                case Z_OK:
                    continue
                case Z_BUF_ERROR where produced == 0:
                    // No progress possible: the input ended inside the stream.
                    return .failure(.malformed("the gzip stream is truncated"))
                case Z_BUF_ERROR:
                    continue
                default:
                    let why = stream.msg.map { String(cString: $0) } ?? "zlib error \(status)"
                    return .failure(.malformed(why))
                }
            }
        }
    }
}

extension Gzip {
    /// `input` compressed as one gzip member (zlib, default level), for
    /// the KDBX writer.
    static func compress(_ input: [UInt8]) -> [UInt8]? {
        var stream = z_stream()
        // 16 + MAX_WBITS: write a gzip wrapper.
        guard
            deflateInit2_(&stream, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size))
                == Z_OK
        else { return nil }
        defer { deflateEnd(&stream) }
        guard let inCount = UInt32(exactly: input.count) else { return nil }
        let bound = Int(deflateBound(&stream, UInt(inCount))) + 64
        var out = [UInt8](repeating: 0, count: bound)
        var input = input
        let status: Int32 = input.withUnsafeMutableBufferPointer { src in
            out.withUnsafeMutableBufferPointer { dst in
                stream.next_in = src.baseAddress
                stream.avail_in = inCount
                stream.next_out = dst.baseAddress
                stream.avail_out = UInt32(dst.count)
                return deflate(&stream, Z_FINISH)
            }
        }
        guard status == Z_STREAM_END else { return nil }
        out.removeLast(out.count - Int(stream.total_out))
        return out
    }
}
