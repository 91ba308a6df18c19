package classifier

// The rule tables. Every program not listed here is dangerous; every
// program listed as read-only is read_only only with the options allowed
// by its entry. Handlers for programs with their own grammar (find, sed,
// awk, git, tar, wrappers, shells) live in files named for their family
// (find.go, sed.go, awk.go, git.go, archive.go, shells.go, wrappers.go,
// builtins.go, writes.go, system.go).

type kind uint8

const (
	kReadOnly kind = iota
	kDangerous
	kForbidden
	kCustom
)

type spec struct {
	kind kind
	rule string // rule id for dangerous/forbidden entries
	msg  string // sentence for dangerous/forbidden entries

	// g is a read-only entry's complete option grammar.
	g *grammar

	net bool // talks to the network
	fn  func(a *analyzer, c *call)
}

func readOnly(g *grammar, names ...string) {
	add(&spec{kind: kReadOnly, g: g}, names...)
}

func dng(rule, msg string) *spec { return &spec{kind: kDangerous, rule: rule, msg: msg} }

func fbd(rule, msg string) *spec { return &spec{kind: kForbidden, rule: rule, msg: msg} }

func custom(fn func(a *analyzer, c *call)) *spec { return &spec{kind: kCustom, fn: fn} }

var rules = map[string]*spec{}

func add(s *spec, names ...string) {
	for _, n := range names {
		rules[n] = s
	}
}

func init() {
	addReadOnly()

	// Programs with their own grammar.
	add(custom(hFind), "find")
	add(custom(hSed), "sed", "gsed")
	add(custom(hAwk), "awk", "gawk", "mawk", "nawk")
	add(custom(hGit), "git")
	add(custom(hTar), "tar", "bsdtar")
	add(custom(hUnzip), "unzip")
	add(custom(hPrintf), "printf")
	add(custom(hDate), "date")
	add(custom(hHostname), "hostname")
	add(custom(hTest), "test", "[")
	add(custom(hKill), "kill")
	add(custom(hRm), "rm")
	add(custom(hChmod), "chmod", "chown", "chgrp")
	add(custom(hDd), "dd")
	add(custom(hTee), "tee")
	add(custom(hShred), "shred")
	add(custom(hInstall), "install")
	add(custom(hCp), "cp", "mv")
	add(custom(hSet), "set")
	add(custom(hUmask), "umask")
	add(custom(hPopd), "popd")
	add(custom(hJobs), "jobs")
	add(custom(hCaller), "caller")
	add(custom(hXxd), "xxd")
	add(custom(hSystemctl), "systemctl")
	add(custom(hInit), "init", "telinit")

	// Wrappers: they run another argv.
	add(custom(hEnv), "env")
	add(custom(hCd), "cd", "pushd")
	add(custom(hAlias), "alias", "trap")
	add(custom(hCommand), "command")
	add(custom(hBuiltin), "builtin")
	add(custom(hExec), "exec")
	add(custom(hTime), "time")
	add(custom(hTimeout), "timeout")
	add(custom(hNice), "nice")
	add(custom(hNohup), "nohup")
	add(custom(hStdbuf), "stdbuf")
	add(custom(hSetsid), "setsid")
	add(custom(hXargs), "xargs")
	add(custom(hWatch), "watch")
	add(custom(hFlock), "flock")
	add(custom(hIonice), "ionice")
	add(custom(hBusybox), "busybox")

	// Shells, interpreters, eval, source.
	add(custom(hShell), "sh", "bash", "dash", "zsh", "ksh", "mksh", "ash", "fish", "csh", "tcsh", "rbash")
	add(custom(hInterpreter), "python", "python2", "python3", "perl", "ruby", "node", "nodejs", "php",
		"lua", "luajit", "Rscript", "deno", "bun", "tclsh", "irb", "pwsh", "osascript", "jshell")
	add(custom(hEval), "eval")
	add(custom(hSource), "source", ".")

	// Forbidden outright.
	add(fbd("privilege", "privilege escalation: runs a command as another user"),
		"sudo", "doas", "su", "pkexec", "sudoedit", "run0", "runuser")
	add(fbd("host.power", "shuts down or reboots the host"), "shutdown", "reboot", "halt", "poweroff", "kexec")
	add(fbd("disk.format", "creates or erases a filesystem, destroying the data on the device"),
		"mkfs", "mke2fs", "mkswap", "wipefs", "blkdiscard", "mkntfs", "mkdosfs", "newfs")

	// Known dangerous programs, with a sentence.
	add(dng("writes.files", "creates, changes or deletes files"), "rmdir", "ln", "touch", "mkdir",
		"truncate", "patch", "unlink", "split", "csplit", "mktemp", "mkfifo", "mknod", "rename",
		"gzip", "gunzip", "bzip2", "bunzip2", "xz", "unxz", "zstd", "unzstd", "zip", "7z", "ar",
		"cpio", "gofmt", "prettier", "black", "ruff", "eslint", "rustfmt", "clang-format", "sponge")
	add(dng("runs.code", "builds or runs project code, or installs packages"), "make", "cmake",
		"ninja", "go", "cargo", "rustc", "rustup", "gcc", "g++", "cc", "c++", "clang", "javac", "java",
		"mvn", "gradle", "npm", "npx", "yarn", "pnpm", "pip", "pip3", "pipx", "uv", "uvx", "poetry",
		"bundle", "bundler", "gem", "composer", "tsc", "jest", "pytest", "tox", "nox", "dotnet",
		"swift", "mix", "rake", "bazel", "meson", "conda", "nix", "cabal", "stack", "ghc", "zig")
	add(dng("containers", "manages containers or infrastructure"), "docker", "podman", "kubectl",
		"helm", "terraform", "ansible", "ansible-playbook", "vagrant", "minikube", "kind", "nerdctl", "buildah")
	add(dng("system", "changes system services, schedules or settings"), "service", "crontab", "at",
		"batch", "sysctl", "mount", "umount", "swapon", "swapoff", "modprobe", "insmod", "rmmod",
		"useradd", "userdel", "usermod", "passwd", "chpasswd", "groupadd", "visudo", "update-alternatives",
		"iptables", "nft", "ip", "ifconfig", "route", "hwclock", "timedatectl", "hostnamectl", "loginctl",
		"chroot", "unshare", "nsenter", "setcap", "chattr", "fdisk", "sfdisk", "parted", "gdisk", "sgdisk", "losetup")
	add(dng("processes", "signals or controls other processes"), "pkill", "killall", "renice",
		"disown", "bg", "fg", "coproc", "strace", "gdb", "ltrace", "top", "htop")
	add(dng("packages", "installs or removes system packages"), "apt", "apt-get", "aptitude", "dpkg",
		"yum", "dnf", "apk", "brew", "snap", "pacman", "zypper", "port", "flatpak", "rpm")
	add(dng("interactive", "an interactive program with shell escapes"), "less", "more", "most",
		"man", "vi", "vim", "nvim", "view", "nano", "emacs", "ed", "ex", "pager", "pico", "joe",
		"mc", "tmux", "screen", "script", "info")
	add(dng("shell.state", "changes the shell's state for later commands"), "unalias",
		"unset", "shopt", "read", "mapfile", "readarray", "hash", "history", "fc", "enable",
		"complete", "compgen", "compopt", "ulimit", "bind", "getopts", "declare", "typeset", "local",
		"export", "readonly", "let", "shift", "suspend", "logout")
	netSpec := func(rule, msg string) *spec { s := dng(rule, msg); s.net = true; return s }
	add(netSpec("network", "uses the network"), "curl", "wget", "fetch", "http", "https", "xh",
		"aria2c", "nc", "ncat", "netcat", "socat", "telnet", "openssl", "ftp", "tftp", "ssh", "scp",
		"sftp", "rsync", "dig", "nslookup", "host", "ping", "ping6", "traceroute", "whois", "gh",
		"mail", "sendmail", "mutt", "lftp", "smbclient", "aws", "gcloud", "az", "gsutil", "s3cmd", "rclone",
		"psql", "mysql", "redis-cli", "mongo", "mongosh", "sqlite3", "ldapsearch", "snmpget", "nmap")
	rsync := netSpec("network", "uses the network")
	rsync.fn = hRsync
	add(rsync, "rsync")
	rules["sqlite3"] = dng("runs.code", "opens a database, which it may change, and has shell escapes")
}
