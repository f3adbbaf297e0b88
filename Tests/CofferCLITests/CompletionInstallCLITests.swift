import CofferTestSupport
import Foundation
import Testing

@Suite("completion scripts installed as documented, black-box")
struct CompletionInstallCLITests {
    @Test func documentedBashAndZshLinesWorkInAFreshHome() throws {
        let home = TestHome()
        let bin = URL(fileURLWithPath: CofferBinary.path).deletingLastPathComponent().path
        let script = """
            set -e
            mkdir -p ~/.local/share/bash-completion/completions
            coffer --generate-completion-script bash > ~/.local/share/bash-completion/completions/coffer
            mkdir -p ~/.zfunc && coffer --generate-completion-script zsh > ~/.zfunc/_coffer
            mkdir -p ~/.config/fish/completions
            coffer --generate-completion-script fish > ~/.config/fish/completions/coffer.fish
            """
        let r = TestHome.spawn(home, "/bin/bash", ["-c", script], env: ["PATH": bin + ":" + (home.environment["PATH"] ?? "/usr/bin:/bin")])
        #expect(r.status == 0, "\(r)")
        for (file, marker) in [
            ("home/.local/share/bash-completion/completions/coffer", "complete"),
            ("home/.zfunc/_coffer", "#compdef coffer"),
            ("home/.config/fish/completions/coffer.fish", "complete -c 'coffer'"),
        ] {
            let text = (try? String(contentsOfFile: home.path(file), encoding: .utf8)) ?? ""
            #expect(text.contains(marker), "\(file) lacks \(marker)")
        }
        #expect(home.run(["--help"]).stdout.contains("--generate-completion-script"))
    }
}
