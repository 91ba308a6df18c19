package config

// DefaultSecretPaths are the files that hold credentials, keys and
// secrets, as gitignore-style path specifiers (a name without a slash
// matches at any depth; `~/` is the home directory; `//` an absolute
// path). Each entry acts as the ask rule `Read(entry)` for every tool
// alike: Read, Grep, Glob and LS ask before reading (and their walks skip
// it), and a shell command that may read a matching path asks, whether it
// names the path literally, through a glob that can match it, or through
// a part only known at run time. The classifier judges with the same list
// (`agentbox classify` shows rule read.secret). tools.secrets replaces
// the list (a user may drop entries); a project config may only add.
//
// Why each is here:
//   - .env*: dotenv files with API keys and database URLs (.env,
//     .env.local, .env.production, backups like .env~), and direnv's
//     .envrc, which often exports the same secrets.
//   - *.pem *.key *.p12 *.pfx *.jks *.keystore *.ppk *.kdbx: TLS and
//     signing keys, key stores, password databases.
//   - id_rsa id_dsa id_ecdsa id_ed25519 id_ecdsa_sk id_ed25519_sk
//     *private_key ssh_host_*_key .ssh: ssh private keys (wherever they
//     were copied) and ssh config. Exact names, not id_rsa*: a rule
//     ending in * can match what any glob like src/*.py can (src/id_rsa.py),
//     so every such glob would ask.
//   - .netrc _netrc .pgpass .my.cnf .git-credentials .npmrc .pypirc
//     .vault-token .docker/config.json .kube/config .aws/credentials
//     .aws/config .config/gh/hosts.yml .config/gcloud .azure
//     credentials.json .gnupg .password-store: tool credentials and
//     tokens, cloud credential files, keyrings.
//   - .bash_history .zsh_history: shell histories hold typed secrets.
//   - //etc/shadow //etc/gshadow //etc/sudoers //run/secrets
//     //var/run/secrets //proc/*/environ: system secrets and the
//     environment of processes (tokens).
var DefaultSecretPaths = []string{
	".env*",
	"*.pem", "*.key", "*.p12", "*.pfx", "*.jks", "*.keystore", "*.ppk", "*.kdbx",
	"id_rsa", "id_dsa", "id_ecdsa", "id_ed25519", "id_ecdsa_sk", "id_ed25519_sk", "*private_key", "ssh_host_*_key", ".ssh",
	".netrc", "_netrc", ".pgpass", ".my.cnf", ".git-credentials", ".npmrc", ".pypirc", ".vault-token",
	"**/.docker/config.json", "**/.kube/config", "**/.aws/credentials", "**/.aws/config",
	"**/.config/gh/hosts.yml", "**/.config/gcloud", ".azure", "credentials.json", ".gnupg", ".password-store",
	".bash_history", ".zsh_history",
	"~/.ssh", "~/.aws", "~/.gnupg", "~/.netrc", "~/.docker/config.json", "~/.kube/config", "~/.config/gh", "~/.config/gcloud",
	"//etc/shadow", "//etc/gshadow", "//etc/sudoers", "//etc/sudoers.d", "//run/secrets", "//var/run/secrets",
	"//proc/*/environ", "//proc/*/task/*/environ",
}
