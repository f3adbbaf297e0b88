import CofferCrypto
import CofferSystem
import CofferTestSupport
import Foundation
import Testing

@testable import CofferKit

#if canImport(Glibc)
import Glibc
#endif

/// `AtomicFile.writeAtomically`, which every output file goes through:
/// it writes through symbolic links, streams to FIFOs, refuses folders.
@Suite("atomic writes: symbolic links, FIFOs and folders")
struct AtomicWriteTests {
    static func isSymlink(_ path: String) -> Bool {
        var st = stat()
        return lstat(path, &st) == 0 && st.st_mode & S_IFMT == S_IFLNK
    }

    @Test func atomicWriteFollowsASymlink() throws {
        let folder = TemporaryDirectory(prefix: "coffer-atomic")
        let dir = folder.url.path
        try "old".write(toFile: dir + "/real.txt", atomically: false, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: dir + "/link", withDestinationPath: "real.txt")
        try AtomicFile.writeAtomically(Data("new".utf8), to: dir + "/link")
        #expect(Self.isSymlink(dir + "/link"))
        #expect(try String(contentsOfFile: dir + "/real.txt", encoding: .utf8) == "new")

        // A dangling link names the file to create, in the link's folder's terms.
        try FileManager.default.createDirectory(atPath: dir + "/sub", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: dir + "/dangling", withDestinationPath: "sub/created.txt")
        try AtomicFile.writeAtomically(Data("made".utf8), to: dir + "/dangling")
        #expect(Self.isSymlink(dir + "/dangling"))
        #expect(try String(contentsOfFile: dir + "/sub/created.txt", encoding: .utf8) == "made")
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).sorted() == ["dangling", "link", "real.txt", "sub"])
    }

    @Test func atomicWriteStreamsToFIFOsAndRefusesFolders() throws {
        let folder = TemporaryDirectory(prefix: "coffer-atomic")
        let dir = folder.url.path
        #expect(mkfifo(dir + "/fifo", 0o600) == 0)
        try FileManager.default.createDirectory(atPath: dir + "/folder", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: dir + "/to-fifo", withDestinationPath: "fifo")
        // A FIFO (directly or through a link) is written as a stream
        // (issue 15): a reader gets the bytes, the FIFO stays.
        for target in ["fifo", "to-fifo"] {
            let reader = open(dir + "/fifo", O_RDONLY | O_NONBLOCK)
            #expect(reader >= 0)
            try AtomicFile.writeAtomically(Data("x".utf8), to: dir + "/" + target)
            var byte: UInt8 = 0
            #expect(read(reader, &byte, 1) == 1 && byte == UInt8(ascii: "x"))
            close(reader)
        }
        do {
            try AtomicFile.writeAtomically(Data("x".utf8), to: dir + "/folder")
            Issue.record("writing over a folder was accepted")
        } catch {
            let e = CofferError(error)
            #expect(e.kind == .cannotCreate && e.exitCode == 73)
            #expect(error.message.contains("is a folder"), "\(error.message)")
        }
        #expect(Self.isSymlink(dir + "/to-fifo"))
        #expect(try FileManager.default.contentsOfDirectory(atPath: dir).sorted() == ["fifo", "folder", "to-fifo"])
    }
}
