package classifier

import "strings"

// Archive programs: read-only only when they list.

// hUnzip: unzip only lists or tests with -l, -v, -t, -Z, or prints with
// -p/-c; everything else extracts.
func hUnzip(a *analyzer, c *call) {
	listing := false
	for i := 1; i < len(c.args); i++ {
		v := c.args[i].val
		if c.args[i].unknown() && c.args[i].mayBeOption() {
			a.flag(c, i, Dangerous, "argument.unknown", "an argument only known at run time could be an option of unzip")
			return
		}
		if !strings.HasPrefix(v, "-") || len(v) < 2 {
			continue
		}
		for _, ch := range v[1:] {
			switch ch {
			case 'l', 'v', 't', 'Z', 'p', 'c':
				listing = true
			case 'q', 'z', '1', '2', 's', 'm', 'h', 'T':
			default:
				a.flag(c, i, Dangerous, "archive.extract", "unzip -"+string(ch)+" may extract or change files")
				return
			}
		}
	}
	if !listing {
		a.flag(c, 0, Dangerous, "archive.extract", "unzip extracts files")
	}
}

// hTar: tar is read-only only in list mode (-t) without options that run
// programs or write files.
func hTar(a *analyzer, c *call) {
	list := false
	var pendingArgs int // old-style bundled options taking a value
	allowedLong := map[string]bool{
		"list": true, "file": true, "gzip": true, "gunzip": true, "bzip2": true, "xz": true, "lzma": true,
		"zstd": true, "auto-compress": true, "verbose": true, "wildcards": true, "no-wildcards": true,
		"exclude": true, "anchored": true, "ignore-case": true, "numeric-owner": true, "utc": true,
		"full-time": true, "ignore-zeros": true, "totals": true, "quoting-style": true, "occurrence": true,
		"show-transformed-names": true, "force-local": true, "lzip": true, "lzop": true, "no-recursion": true,
	}
	checkFile := func(i int) {
		if i >= len(c.args) {
			return
		}
		f := c.args[i]
		if f.unknown() || strings.Contains(f.val, ":") {
			a.flag(c, i, Dangerous, "tar.remote", "a tar archive name with ':' or only known at run time may run a remote shell")
		}
	}
	for i := 1; i < len(c.args); i++ {
		f := c.args[i]
		v := f.val
		if pendingArgs > 0 {
			pendingArgs--
			continue
		}
		if f.unknown() {
			if f.mayBeOption() {
				a.flag(c, i, Dangerous, "argument.unknown", "an argument only known at run time could be an option of tar")
			}
			continue
		}
		switch {
		case strings.HasPrefix(v, "--"):
			n, val, has := strings.Cut(v[2:], "=")
			if !allowedLong[n] {
				a.flag(c, i, Dangerous, "tar.option", "--"+n+" is not a known read-only tar option")
				continue
			}
			if n == "list" {
				list = true
			}
			if n == "file" {
				if has {
					if strings.Contains(val, ":") {
						a.flag(c, i, Dangerous, "tar.remote", "an archive name with ':' makes tar run a remote shell")
					}
				} else {
					checkFile(i + 1)
					i++
				}
			}
			if (n == "exclude" || n == "quoting-style" || n == "occurrence") && !has {
				i++
			}
		case strings.HasPrefix(v, "-") || i == 1:
			letters := strings.TrimPrefix(v, "-")
			oldStyle := !strings.HasPrefix(v, "-")
			for k := 0; k < len(letters); k++ {
				switch ch := letters[k]; ch {
				case 't':
					list = true
				case 'v', 'z', 'j', 'J', 'Z', 'a', 'i', 'O', 'p', 'P', 'S', 'w', 'B', 'R':
				case 'f', 'C', 'X', 'b', 'L', 'N':
					if oldStyle {
						pendingArgs++
						if ch == 'f' {
							checkFile(i + pendingArgs)
						}
						continue
					}
					if k == len(letters)-1 {
						if ch == 'f' {
							checkFile(i + 1)
						}
						i++
					} else if ch == 'f' && strings.Contains(letters[k+1:], ":") {
						a.flag(c, i, Dangerous, "tar.remote", "an archive name with ':' makes tar run a remote shell")
					}
					k = len(letters)
				default:
					a.flag(c, i, Dangerous, "tar.option", "tar -"+string(ch)+" extracts, creates or runs programs")
					k = len(letters)
				}
			}
		}
	}
	if !list {
		a.flag(c, 0, Dangerous, "archive.extract", "tar without -t extracts or creates archives")
	}
}
