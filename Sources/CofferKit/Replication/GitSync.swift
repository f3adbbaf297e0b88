import CofferSync
import CofferSystem
import Foundation

#if canImport(Glibc)
import Glibc
#endif

/// What `coffer sync DIR --git` did.
public struct GitSyncReport: Sendable {
    /// The `coffer sync` rounds run (before and after each pull).
    public var rounds: [SyncReport] = []
    /// Commits of this replica's bundle made.
    public var commits = 0
    /// Push attempts (more than one: the remote moved on meanwhile).
    public var attempts = 0
    /// The remote had the branch (something was pulled and rebased onto).
    public var pulled = false
    public var remote: String
    public var branch: String
}

extension Replication {
    package func syncGit(
        dir: String, remote: String? = nil, attempts: Int = Vault.gitPushAttempts, note: (String) -> Void = { _ in },
        adoptAboveOwnKDF: Bool = false,
        adoptKey: ((KeyEpoch, String, Int) throws(CofferError) -> SecretBytes?)? = nil, identity member: MemberIdentity? = nil
    ) throws(CofferError) -> GitSyncReport {
        let git = GitRunner(dir: dir)
        guard Vault.isFolder(dir) else {
            throw CofferError(.fileNotFound, "no such folder: \(dir)", hint: "clone your sync repository first: git clone URL \(dir)")
        }
        guard let inside = try? git.output(["rev-parse", "--is-inside-work-tree"]), inside == "true" else {
            throw CofferError(
                .usage, "\(dir) is not a git work tree",
                remedy: .init(.cloneSyncRepository, "clone your sync repository there first (git clone URL \(dir)), or sync without git", path: dir))
        }
        guard let branch = try? git.output(["symbolic-ref", "--short", "-q", "HEAD"]), !branch.isEmpty else {
            throw CofferError(.usage, "\(dir) is not on a branch (detached HEAD)", hint: "check out the branch the machines share: git -C \(dir) switch main")
        }
        let remoteName: String
        if let remote {
            remoteName = remote
        } else if let upstream = try? git.output(["config", "--get", "branch.\(branch).remote"]), !upstream.isEmpty {
            remoteName = upstream
        } else {
            remoteName = "origin"
        }
        guard (try? git.output(["remote", "get-url", "--", remoteName])) != nil else {
            throw CofferError(
                .usage, "\(dir) has no git remote named '\(remoteName)'",
                remedy: .init(.addGitRemote, "add it with `git -C \(dir) remote add \(remoteName) URL`, or name another remote", path: dir, name: remoteName))
        }
        let gitDir = (try? git.output(["rev-parse", "--absolute-git-dir"])) ?? (dir + "/.git")
        let lock = try GitSyncLock(path: gitDir + "/coffer-sync.lock")
        defer { lock.release() }
        let identity: [String] =
            ((try? git.output(["config", "user.email"])) ?? "").isEmpty
            ? ["-c", "user.name=coffer", "-c", "user.email=coffer@localhost"] : []

        var report = GitSyncReport(remote: remoteName, branch: branch)
        var current = self
        func syncAndCommit() throws(CofferError) {
            let r = try current.sync(dir: dir, adoptAboveOwnKDF: adoptAboveOwnKDF, adoptKey: adoptKey, identity: member)
            if let next = r.adoptedVault { current = next.replication }
            report.rounds.append(r)
            // This replica's files only: the new snapshot or segment and
            // the removals it made (git stores only what changed).
            let replica = String((r.ownBundle as NSString).lastPathComponent.prefix(32))
            guard replica.count == 32 else { return }
            let own = replica + ".*"
            try git.check(["add", "-A", "--", own], what: "stage \(own)")
            let staged = try git.status(["diff", "--cached", "--quiet", "--", own])
            if staged == 1 {
                try git.check(
                    identity + ["commit", "-q", "-m", "coffer sync: replica \(replica.prefix(8))", "--", own], what: "commit \(own)")
                report.commits += 1
            }
        }
        try syncAndCommit()
        for attempt in 1...max(1, attempts) {
            report.attempts = attempt
            try git.check(["fetch", "-q", "--", remoteName], what: "fetch from \(remoteName)", kind: .ioError)
            let tracking = "refs/remotes/\(remoteName)/\(branch)"
            if (try git.status(["rev-parse", "-q", "--verify", tracking])) == 0 {
                report.pulled = true
                if (try git.status(["rev-parse", "-q", "--verify", "HEAD"])) != 0 {
                    // No commit here yet (a clone of an empty remote by a
                    // replica that wrote nothing, a read-only member's):
                    // there is nothing to rebase, take the remote's branch.
                    try git.check(["merge", "-q", "--ff-only", tracking], what: "check out \(remoteName)/\(branch)")
                    try syncAndCommit()
                } else if (try git.status(["merge-base", "--is-ancestor", tracking, "HEAD"])) != 0 {
                    let rebase = try git.run(identity + ["rebase", "-q", "--autostash", tracking])
                    if rebase.status != 0 {
                        _ = try? git.status(["rebase", "--abort"])
                        // Rebasing only fails on one file changed on both
                        // sides, or on an unusable repository.
                        guard rebase.errors.contains("CONFLICT") || rebase.output.contains("CONFLICT") else {
                            throw CofferError(
                                .cannotCreate, "git could not rebase \(dir) onto \(remoteName)/\(branch): \(rebase.lastErrorLine)",
                                hint: "run `git -C \(dir) rebase \(remoteName)/\(branch)` by hand to see why")
                        }
                        throw CofferError(
                            .badData, "git could not rebase \(dir) onto \(remoteName)/\(branch): two machines changed the same file",
                            hint: "each machine writes only its own bundle; resolve it by hand in \(dir) (keep both machines' files), then sync again")
                    }
                    try syncAndCommit()
                }
            }
            let push = try git.run(["push", "--porcelain", "-q", "--set-upstream", "--", remoteName, "HEAD:refs/heads/\(branch)"])
            if push.status == 0 { return report }
            let rejected =
                push.output.split(separator: "\n").contains {
                    $0.hasPrefix("!") && ($0.contains("rejected") || $0.contains("fetch first") || $0.contains("non-fast-forward"))
                }
                || push.errors.contains("[rejected]") || push.errors.contains("fetch first") || push.errors.contains("non-fast-forward")
            guard rejected else {
                throw CofferError(
                    .ioError, "git push to \(remoteName) failed: \(push.lastErrorLine)",
                    hint: "check the remote and your access to it; the vault and its bundle are up to date locally")
            }
            note("the push was rejected (another machine pushed first); pulling again (attempt \(attempt + 1) of \(attempts))")
            usleep(UInt32.random(in: 100_000...400_000) * UInt32(attempt))
        }
        throw CofferError(
            .busy, "git push to \(remoteName) was rejected \(attempts) times: other machines kept pushing",
            remedy: .init(.syncAgain, "sync through git again; the vault and its bundle are committed locally", path: dir))
    }
}

/// Runs git in a folder, capturing its output. No secret is ever in its
/// arguments (paths, a remote name, a branch).
struct GitRunner {
    let dir: String

    struct Result {
        var status: Int32
        var output: String
        var errors: String
        var lastErrorLine: String {
            errors.split(separator: "\n").last.map(String.init) ?? "exit status \(status)"
        }
    }

    final class Capture: @unchecked Sendable {
        var out: [UInt8] = []
        var err: [UInt8] = []
    }

    func run(_ args: [String]) throws(CofferError) -> Result {
        var env = ProcessInfo.processInfo.environment
        env["LC_ALL"] = "C"
        // No prompt for credentials when nobody can answer it.
        if isatty(0) == 0 { env["GIT_TERMINAL_PROMPT"] = "0" }
        let capture = Capture()
        let termination: ChildTermination
        do {
            termination = try ChildProcess.run(
                ["git", "-C", dir] + args, environment: env.map { "\($0.key)=\($0.value)" },
                filter: { fd, bytes in
                    if let bytes {
                        if fd == 1 { capture.out += bytes } else { capture.err += bytes }
                    }
                    return []
                })
        } catch {
            throw CofferError(.fileNotFound, "cannot run git: \(error)", hint: "install git (Debian: apt install git)")
        }
        return Result(
            status: termination.status, output: String(decoding: capture.out, as: UTF8.self),
            errors: String(decoding: capture.err, as: UTF8.self))
    }

    /// The exit status.
    func status(_ args: [String]) throws(CofferError) -> Int32 { try run(args).status }

    /// Trimmed stdout; throws when git fails.
    func output(_ args: [String]) throws(CofferError) -> String {
        let r = try run(args)
        guard r.status == 0 else { throw CofferError(.internalError, "git \(args.first ?? ""): \(r.lastErrorLine)") }
        return r.output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    func check(_ args: [String], what: String, kind: CofferError.Kind = .cannotCreate) throws(CofferError) {
        let r = try run(args)
        guard r.status == 0 else {
            throw CofferError(kind, "git could not \(what): \(r.lastErrorLine)", hint: "run the git command by hand in \(dir) to see why")
        }
    }
}

/// An exclusive lock on a file, held for one `sync --git` run, so that two
/// runs on one machine do not use one git index at the same time. Waits
/// up to 60 seconds.
final class GitSyncLock {
    private var fd: Int32

    init(path: String) throws(CofferError) {
        fd = Glibc.open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw CofferError(.cannotCreate, "cannot create \(path): \(String(cString: strerror(errno)))") }
        let deadline = Date().addingTimeInterval(60)
        while flock(fd, LOCK_EX | LOCK_NB) != 0 {
            if Date() > deadline {
                close(fd)
                fd = -1
                throw CofferError(
                    .busy, "another git sync is running in this repository", remedy: .init(.waitForOtherSync, "wait for it to finish, then try again"))
            }
            usleep(100_000)
        }
    }

    func release() {
        if fd >= 0 {
            flock(fd, LOCK_UN)
            close(fd)
            fd = -1
        }
    }

    deinit { release() }
}
