package classifier

import "strings"

// Programs that change the system: the clock, the host name, services,
// run levels.

var dateGrammar = gnu("d:f:I::r:R!s:u", "date= debug file= iso-8601? resolution reference= rfc-email rfc-3339= !set= universal utc uct").because("set the system clock")

// hDate: date sets the clock with -s or an operand not starting with +.
func hDate(a *analyzer, c *call) {
	a.checkOptions(c, dateGrammar)
	for i := 1; i < len(c.args); i++ {
		v := c.args[i].val
		if strings.HasPrefix(v, "-") {
			if (v == "-d" || v == "-f" || v == "-r" || v == "--date" || v == "--file" || v == "--reference") && i+1 < len(c.args) {
				i++
			}
			continue
		}
		if !strings.HasPrefix(v, "+") || c.args[i].unknown() && !strings.HasPrefix(c.args[i].lead, "+") {
			a.flag(c, i, Dangerous, "date.set", "an operand that is not a +FORMAT sets the system clock")
		}
	}
}

var hostnameGrammar = gnu("aAdfiIsyv!F:!b", "alias all-fqdns domain fqdn long ip-address all-ip-addresses short yp nis verbose !file= !boot").because("set the host name")

// hHostname: any operand (or -F/-b) sets the host name.
func hHostname(a *analyzer, c *call) {
	a.checkOptions(c, hostnameGrammar)
	for i := 1; i < len(c.args); i++ {
		v := c.args[i].val
		if c.args[i].unknown() || !strings.HasPrefix(v, "-") || v == "-F" || v == "-b" || strings.HasPrefix(v, "--file") || strings.HasPrefix(v, "--boot") {
			a.flag(c, i, Dangerous, "hostname.set", "hostname with an operand changes the host name")
		}
	}
}

func hSystemctl(a *analyzer, c *call) {
	for i := 1; i < len(c.args); i++ {
		switch c.args[i].val {
		case "poweroff", "reboot", "halt", "kexec", "emergency", "rescue", "soft-reboot":
			a.flag(c, i, Forbidden, "host.power", "shuts down or reboots the host")
			return
		}
	}
	a.flag(c, 0, Dangerous, "system", "manages system services")
}

func hInit(a *analyzer, c *call) {
	if len(c.args) > 1 && (c.args[1].val == "0" || c.args[1].val == "6") {
		a.flag(c, 1, Forbidden, "host.power", "shuts down or reboots the host")
		return
	}
	a.flag(c, 0, Dangerous, "system", "changes the system's run level")
}
