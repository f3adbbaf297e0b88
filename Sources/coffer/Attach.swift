import ArgumentParser
import CofferKit
import Foundation

#if canImport(Glibc)
import Glibc
#endif

struct Attach: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attach",
        abstract: "Store a file (an SSH key, a recovery-codes PDF) in an item, as a secret field.",
        discussion: """
            The file's bytes are kept exactly (binary-safe) in a field named after the file, or \
            --as FIELD; it syncs like every field. At most 16 MiB per file. Save it again with \
            coffer get NAME --field FIELD --out FILE (written with mode 0600); `coffer show` lists \
            attachments with their size.
            """)

    @OptionGroup var options: VaultOptions

    @Argument(help: "Item name, or id:HEX.", completion: .custom(Completion.itemNames))
    var name: String

    @Argument(help: "The file to attach.", completion: .file())
    var file: String

    @Option(name: .customLong("as"), help: ArgumentHelp("Field name (default: the file's name).", valueName: "field"))
    var field: String?

    func run() throws {
        let fieldName = field ?? (file as NSString).lastPathComponent
        let bytes = try Attach.readFile(file)
        let vault = try options.unlockForWriting()
        var edit = ItemEdit()
        edit.setFields = [Field(name: fieldName, bytes: bytes, isSecret: true, isFile: true)]
        let item = try vault.edit(name, edit)
        Output.note("attached \(file) to \(item.name) as '\(fieldName)' (\(Show.byteCount(bytes.count)))")
    }

    /// A regular file's bytes, at most ``Field/maxValueBytes``.
    static func readFile(_ path: String) throws(CofferError) -> [UInt8] {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK)
        guard fd >= 0 else {
            let code = errno
            if code == ENOENT || code == ENOTDIR {
                throw CofferError(.fileNotFound, "no file at \(path)", hint: "check the path")
            }
            throw CofferError(.fileNotFound, "cannot open \(path): \(String(cString: strerror(code)))")
        }
        defer { close(fd) }
        var st = stat()
        guard fstat(fd, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else {
            throw CofferError(.usage, "\(path) is not a regular file", hint: "attach a file, not a folder, device or pipe")
        }
        guard st.st_size <= Field.maxValueBytes else {
            throw CofferError(
                .usage, "\(path) is \(Show.byteCount(Int(st.st_size))); an attachment may be at most 16 MiB",
                hint: "keep large files elsewhere and their key in coffer")
        }
        var bytes = [UInt8](repeating: 0, count: Int(st.st_size))
        var got = 0
        while got < bytes.count {
            let n = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + got, $0.count - got) }
            if n < 0 && errno == EINTR { continue }
            if n < 0 { throw CofferError(.ioError, "cannot read \(path): \(String(cString: strerror(errno)))") }
            if n == 0 { break }
            got += n
        }
        return Array(bytes[0..<got])
    }
}
