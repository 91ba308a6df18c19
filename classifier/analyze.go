package classifier

import (
	"strings"

	"mvdan.cc/sh/v3/syntax"
)

// stageInfo gathers what a pipeline stage does, for the detectors that
// look across a pipeline (curl | sh, cat key | nc).
type stageInfo struct {
	network    bool // fetches from or sends to the network
	decoder    bool // decodes data (base64 -d, xxd -r): obfuscated code
	runsStdin  bool // runs code read from stdin (sh, python with no script)
	credential bool // reads a credential file
	envDump    bool // prints the environment
	netSend    bool // a network command that sends stdin or data
}

func (s *stageInfo) or(o stageInfo) {
	s.network = s.network || o.network
	s.decoder = s.decoder || o.decoder
	s.runsStdin = s.runsStdin || o.runsStdin
	s.credential = s.credential || o.credential
	s.envDump = s.envDump || o.envDump
	s.netSend = s.netSend || o.netSend
}

// analyzer walks one command. It is used by one goroutine.
type analyzer struct {
	opts *options
	o    options // storage for opts, saving an allocation
	top  string  // the original command

	src  string // the source currently parsed (top or a nested body)
	base int    // offset in top of src, or of the word holding it
	// nested is true while src is a re-parsed body whose offsets do not
	// map one to one onto top.
	nested bool

	depth    int
	class    Class
	reasons  []Reason
	commands [][]string
	simple   int // simple commands found
	capHit   bool

	// parts are the top-level simple commands while the command is still
	// plain: only simple commands joined by lists, pipelines and
	// subshells, every word known before it runs (Verdict.Parts).
	// unplain is set by anything else; inPart is 1 + the index of the part
	// being judged (0: none), so that its findings raise its own class.
	parts   []Part
	unplain bool
	inPart  int

	netSeen int // number of network commands judged so far
	cur     *stageInfo

	// stdinNet is set while judging a statement whose input redirection
	// or here-document fetched from the network.
	stdinNet bool
	curStmt  *syntax.Stmt
	// gitReadAt holds where git read commands were seen.
	// cdSeen is set by any change of directory (cd, pushd, popd, env -C):
	// git read commands in the same command may then run in a nested
	// repository, whose config is not trusted.
	cdSeen      bool
	cdProtected string // set after a cd to /, ~ or a system directory
	gitReadAt   []Reason
}

const maxReasons = 64

// add records a finding and raises the class.
func (a *analyzer) add(c Class, rule, text string, off int, msg string) {
	if c.rank() > a.class.rank() {
		a.class = c
	}
	if c == ReadOnly {
		return
	}
	if a.inPart > 0 {
		if p := &a.parts[a.inPart-1]; c.rank() > p.Class.rank() {
			p.Class = c
		}
	} else {
		a.unplain = true // a finding about no single simple command
	}
	if strings.HasPrefix(rule, "cap.") {
		a.unplain = true
	}
	if len(a.reasons) >= maxReasons {
		if len(a.reasons) == maxReasons {
			a.reasons = append(a.reasons, Reason{Rule: "cap.reasons", Text: "", Offset: off,
				Message: "more findings than the reason cap; the class still counts all of them"})
		}
		return
	}
	for _, r := range a.reasons {
		if r.Rule == rule && r.Offset == off && r.Text == text {
			return
		}
	}
	if len(text) > 200 {
		text = text[:200] + "..."
	}
	a.reasons = append(a.reasons, Reason{Rule: rule, Text: text, Offset: off, Message: msg})
}

// at returns the source text of n and its offset in the top command.
func (a *analyzer) at(n syntax.Node) (string, int) {
	if n == nil || !n.Pos().IsValid() {
		return "", a.base
	}
	s, e := int(n.Pos().Offset()), int(n.End().Offset())
	if s < 0 || s > len(a.src) {
		return "", a.base
	}
	if e > len(a.src) || e < s {
		e = len(a.src)
	}
	if a.nested {
		return a.src[s:e], a.base
	}
	return a.src[s:e], a.base + s
}

func (a *analyzer) addNode(c Class, rule string, n syntax.Node, msg string) {
	t, off := a.at(n)
	a.add(c, rule, t, off, msg)
}

// parseAndWalk parses src as bash and analyses it. base is the offset in
// the top command (of the word holding src when depth > 0).
func (a *analyzer) parseAndWalk(src string, base int, depthAdd int) {
	if a.depth+depthAdd > a.opts.maxDepth {
		a.capDepth(src, base)
		return
	}
	if depthAdd > 0 {
		a.unplain = true // a script run by a command: not a part of its own
		if off, ok := controlChar(src); ok {
			a.add(Dangerous, "control_char", src[off:min(off+1, len(src))], base,
				"the nested script holds a control character that the parser and bash read differently")
		}
	}
	p := parserPool.Get().(*syntax.Parser)
	f, err := p.Parse(strings.NewReader(src), "")
	parserPool.Put(p)
	oldSrc, oldBase, oldNested := a.src, a.base, a.nested
	a.src, a.base = src, base
	if depthAdd > 0 {
		a.nested = true
	}
	a.depth += depthAdd
	defer func() {
		a.src, a.base, a.nested = oldSrc, oldBase, oldNested
		a.depth -= depthAdd
	}()
	if err != nil {
		off := base
		if pe, ok := err.(syntax.ParseError); ok && !a.nested {
			off = base + int(pe.Pos.Offset())
		}
		a.add(Dangerous, "parse_error", src, off, "bash cannot parse this reliably: "+err.Error())
		return
	}
	a.stmts(f.Stmts)
}

func (a *analyzer) capDepth(text string, off int) {
	a.capHit = true
	a.add(Dangerous, "cap.depth", text, off, "nesting is deeper than the depth cap; the rest was not analysed")
}

func (a *analyzer) stmts(list []*syntax.Stmt) {
	for _, s := range list {
		a.stmt(s)
	}
}

func (a *analyzer) enter(n syntax.Node) bool {
	if a.depth >= a.opts.maxDepth {
		t, off := a.at(n)
		a.capDepth(t, off)
		return false
	}
	a.depth++
	return true
}

func (a *analyzer) leave() { a.depth-- }

func (a *analyzer) stmt(s *syntax.Stmt) {
	if s == nil {
		return
	}
	if s.Coprocess || s.Disown {
		a.addNode(Dangerous, "construct.coproc", s, "coprocesses keep running beside the shell")
	}
	oldStdinNet, oldStmt := a.stdinNet, a.curStmt
	a.stdinNet, a.curStmt = false, s
	// A simple command is a part: its findings, redirections included,
	// are its own.
	oldPart, cmdIdx, part := a.inPart, len(a.commands), -1
	if ce, ok := s.Cmd.(*syntax.CallExpr); ok && !a.unplain && a.inPart == 0 && len(ce.Args) > 0 {
		a.parts = append(a.parts, Part{Class: ReadOnly})
		part = len(a.parts) - 1
		a.inPart = part + 1
	}
	for _, r := range s.Redirs {
		before := a.netSeen
		a.redirect(r, s.Cmd == nil)
		if a.netSeen > before && isInput(r.Op) {
			a.stdinNet = true
		}
	}
	if s.Cmd != nil {
		a.command(s.Cmd, s)
	}
	if part >= 0 {
		if len(a.commands) > cmdIdx {
			a.parts[part].Argv = a.commands[cmdIdx]
		} else {
			a.unplain = true
		}
	}
	a.inPart = oldPart
	a.stdinNet, a.curStmt = oldStdinNet, oldStmt
}

func isInput(op syntax.RedirOperator) bool {
	switch op {
	case syntax.RdrIn, syntax.Hdoc, syntax.DashHdoc, syntax.WordHdoc, syntax.DplIn, syntax.RdrInOut:
		return true
	}
	return false
}

func (a *analyzer) command(cmd syntax.Command, s *syntax.Stmt) {
	switch cmd.(type) {
	case *syntax.CallExpr, *syntax.BinaryCmd, *syntax.Subshell, *syntax.Block:
	default:
		a.unplain = true // loops, conditions, functions, ...: not plain
	}
	switch c := cmd.(type) {
	case *syntax.CallExpr:
		a.call(c, s)
	case *syntax.BinaryCmd:
		if c.Op == syntax.Pipe || c.Op == syntax.PipeAll {
			a.pipeline(c)
			return
		}
		a.stmt(c.X)
		a.stmt(c.Y)
	case *syntax.Subshell:
		if a.enter(c) {
			a.stmts(c.Stmts)
			a.leave()
		}
	case *syntax.Block:
		if a.enter(c) {
			a.stmts(c.Stmts)
			a.leave()
		}
	case *syntax.IfClause:
		if !a.enter(c) {
			return
		}
		for ic := c; ic != nil; ic = ic.Else {
			a.stmts(ic.Cond)
			a.stmts(ic.Then)
		}
		a.leave()
	case *syntax.WhileClause:
		if a.enter(c) {
			a.stmts(c.Cond)
			a.stmts(c.Do)
			a.leave()
		}
	case *syntax.ForClause:
		if !a.enter(c) {
			return
		}
		if c.Select {
			a.addNode(Dangerous, "construct.select", c, "select reads choices from standard input")
		}
		switch l := c.Loop.(type) {
		case *syntax.WordIter:
			if l.Name != nil && !loopVarSafe(l.Name.Value) {
				a.addNode(Dangerous, "assign.shell", l.Name, "the loop assigns "+l.Name.Value+", which can change what later commands do")
			}
			for _, w := range l.Items {
				a.words([]*syntax.Word{w})
			}
		case *syntax.CStyleLoop:
			a.arith(l.Init)
			a.arith(l.Cond)
			a.arith(l.Post)
		}
		a.stmts(c.Do)
		a.leave()
	case *syntax.CaseClause:
		if !a.enter(c) {
			return
		}
		a.words([]*syntax.Word{c.Word})
		for _, it := range c.Items {
			a.words(it.Patterns)
			a.stmts(it.Stmts)
		}
		a.leave()
	case *syntax.ArithmCmd:
		a.arith(c.X)
	case *syntax.TestClause:
		a.testExpr(c.X)
	case *syntax.DeclClause:
		a.addNode(Dangerous, "builtin.declare", c, c.Variant.Value+" changes shell variables for later commands (and evaluates array subscripts)")
		for _, as := range c.Args {
			a.assign(as, false)
		}
	case *syntax.LetClause:
		a.addNode(Dangerous, "builtin.let", c, "let assigns variables and evaluates arithmetic, whose subscripts can run commands")
		for _, e := range c.Exprs {
			a.arith(e)
		}
	case *syntax.TimeClause:
		a.stmt(c.Stmt)
	case *syntax.CoprocClause:
		a.addNode(Dangerous, "construct.coproc", c, "coprocesses keep running beside the shell")
		a.stmt(c.Stmt)
	case *syntax.FuncDecl:
		a.funcDecl(c)
	default:
		a.addNode(Dangerous, "construct.unknown", cmd, "this shell construct is not understood")
	}
}

// pipeline analyses every stage and then looks across the stages.
func (a *analyzer) pipeline(c *syntax.BinaryCmd) {
	var stages []*syntax.Stmt
	var flatten func(s *syntax.Stmt)
	flatten = func(s *syntax.Stmt) {
		if b, ok := s.Cmd.(*syntax.BinaryCmd); ok && (b.Op == syntax.Pipe || b.Op == syntax.PipeAll) && len(s.Redirs) == 0 && !s.Negated {
			flatten(b.X)
			flatten(b.Y)
			return
		}
		stages = append(stages, s)
	}
	flatten(c.X)
	flatten(c.Y)
	outer := a.cur
	infos := make([]stageInfo, len(stages))
	for i, s := range stages {
		a.cur = &infos[i]
		a.stmt(s)
	}
	a.cur = outer
	var before stageInfo
	for i, s := range stages {
		if i > 0 {
			info := infos[i]
			switch {
			case info.runsStdin && before.network:
				a.addNode(Forbidden, "remote_code.pipe", c, "code fetched from the network is piped into a shell or interpreter")
			case info.runsStdin && before.decoder:
				a.addNode(Forbidden, "remote_code.obfuscated", c, "decoded (obfuscated) text is piped into a shell or interpreter")
			case info.runsStdin:
				a.addNode(Dangerous, "interpreter.stdin", s, "a shell or interpreter runs code from the pipe")
			}
			if info.netSend && (before.credential || before.envDump) {
				a.addNode(Forbidden, "exfiltration.pipe", c, "credentials or the environment are piped to a network command")
			}
		}
		before.or(infos[i])
	}
	if outer != nil {
		outer.or(before)
	}
}

// words analyses words that are not a command's argv (for items, case
// words, assignment values) and returns their fields.
func (a *analyzer) words(ws []*syntax.Word) []field {
	out := make([]field, 0, len(ws))
	for _, w := range ws {
		if w == nil {
			continue
		}
		out = a.expandWord(w, out)
	}
	return out
}

func (a *analyzer) redirect(r *syntax.Redirect, bare bool) {
	if r.Hdoc != nil {
		a.hdoc(r.Hdoc)
	}
	if r.Word == nil {
		return
	}
	fs := a.words([]*syntax.Word{r.Word})
	target := ""
	dynamic := true
	if len(fs) == 1 && !fs[0].unknown() {
		target, dynamic = fs[0].val, false
	} else {
		a.unplain = true
	}
	if !dynamic && (strings.HasPrefix(target, "/dev/tcp/") || strings.HasPrefix(target, "/dev/udp/")) {
		a.netSeen++
		if a.cur != nil {
			a.cur.network, a.cur.netSend = true, true
		}
		a.addNode(Dangerous, "network", r, "bash opens a network connection for "+target)
		if t, _ := a.at(a.curStmt); sensitivePath(t) {
			a.addNode(Forbidden, "exfiltration.credential", r, "sends a credential or private key over the network")
		}
		return
	}
	if !dynamic && target == "/proc/sysrq-trigger" && r.Op != syntax.RdrIn {
		a.addNode(Forbidden, "host.power", r, "writing to /proc/sysrq-trigger can reboot or crash the host")
		return
	}
	if r.N != nil && strings.HasPrefix(r.N.Value, "{") {
		a.addNode(Dangerous, "redirect.varfd", r, "{var}> redirections assign a shell variable")
	}
	switch r.Op {
	case syntax.RdrIn, syntax.WordHdoc, syntax.Hdoc, syntax.DashHdoc:
		if r.Op == syntax.RdrIn && !dynamic && sensitivePath(target) {
			a.addNode(Dangerous, "read.credential", r, "reads a credential or secret file")
			if a.cur != nil {
				a.cur.credential = true
			}
		}
		return
	case syntax.DplIn, syntax.DplOut:
		if !dynamic && (target == "-" || isDigits(target)) {
			return
		}
		if r.Op == syntax.DplIn {
			a.addNode(Dangerous, "redirect.unknown", r, "this redirection is not a plain fd duplication")
			return
		}
	}
	// An output redirection: >, >>, >|, &>, &>>, <>, >&file.
	switch {
	case dynamic:
		a.addNode(Dangerous, "redirect.write", r, "writes to a file whose name is only known at run time")
	case blockDevice(target):
		a.addNode(Forbidden, "disk.raw_write", r, "writes straight to a block device, destroying its data")
	case harmlessSink(target):
		// /dev/null and the standard streams are not file writes.
	default:
		a.addNode(Dangerous, "redirect.write", r, "writes to the file "+target)
	}
}

// loopVarSafe: a for loop may assign lower-case names; upper-case ones
// may be PATH, IFS, PS4 or another variable that changes the shell.
func loopVarSafe(name string) bool {
	for i := 0; i < len(name); i++ {
		c := name[i]
		if c >= 'a' && c <= 'z' {
			return true
		}
	}
	return false
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// hdoc analyses an unquoted here-document body: it expands substitutions.
func (a *analyzer) hdoc(w *syntax.Word) {
	for _, p := range w.Parts {
		a.partSideEffects(p)
	}
}

// partSideEffects finds what a word part runs or reads at run time,
// without building its value.
func (a *analyzer) partSideEffects(p syntax.WordPart) {
	switch p := p.(type) {
	case *syntax.DblQuoted:
		for _, q := range p.Parts {
			a.partSideEffects(q)
		}
	case *syntax.ParamExp:
		a.paramExp(p)
	case *syntax.CmdSubst:
		a.cmdSubst(p.Stmts, p)
	case *syntax.ProcSubst:
		a.cmdSubst(p.Stmts, p)
	case *syntax.ArithmExp:
		a.arith(p.X)
	}
}

// cmdSubst analyses the statements of a command or process substitution.
func (a *analyzer) cmdSubst(list []*syntax.Stmt, n syntax.Node) {
	a.unplain = true
	if !a.enter(n) {
		return
	}
	a.stmts(list)
	a.leave()
}

// paramExp flags an expansion (its value is not known before it runs)
// and analyses everything nested in it.
func (a *analyzer) paramExp(p *syntax.ParamExp) {
	a.unplain = true
	name := ""
	if p.Param != nil {
		name = p.Param.Value
	}
	if p.Param != nil && (name == "?" || name == "#" || name == "$" || name == "!") && p.Index == nil &&
		p.Exp == nil && p.Repl == nil && p.Slice == nil && !p.Excl && !p.Length && p.Names == 0 {
		return // a number the shell itself sets
	}
	msg := "expands $" + name + ", whose value is only known at run time"
	if p.Excl {
		msg = "indirect expansion ${!" + name + "}: the value is only known at run time"
	}
	a.addNode(Dangerous, "expansion.parameter", p, msg)
	if a.cur != nil && secretName(name) {
		a.cur.credential = true
	}
	if p.Index != nil {
		a.arith(p.Index)
	}
	if p.Slice != nil {
		a.arith(p.Slice.Offset)
		a.arith(p.Slice.Length)
	}
	if p.Repl != nil {
		a.words([]*syntax.Word{p.Repl.Orig, p.Repl.With})
	}
	if p.Exp != nil && p.Exp.Word != nil {
		a.words([]*syntax.Word{p.Exp.Word})
	}
	if p.NestedParam != nil {
		a.partSideEffects(p.NestedParam)
	}
}

// arith checks an arithmetic expression: only number literals are safe.
// Variables are evaluated recursively and their subscripts run commands.
func (a *analyzer) arith(e syntax.ArithmExpr) bool {
	if e == nil {
		return true
	}
	a.unplain = true
	safe := true
	syntax.Walk(e, func(n syntax.Node) bool {
		switch n := n.(type) {
		case *syntax.Word:
			if lit := n.Lit(); lit != "" && isNumberLit(lit) {
				return false
			}
			safe = false
			a.addNode(Dangerous, "arith.variable", n, "arithmetic on a variable or a run-time value evaluates it as an expression, and a subscript in it can run commands")
			for _, p := range n.Parts {
				a.partSideEffects(p)
			}
			return false
		case *syntax.ParamExp:
			safe = false
			a.paramExp(n)
			return false
		case *syntax.CmdSubst:
			safe = false
			a.addNode(Dangerous, "arith.variable", n, "arithmetic on a run-time value evaluates it as an expression, and a subscript in it can run commands")
			a.cmdSubst(n.Stmts, n)
			return false
		case *syntax.BinaryArithm:
			if isAssignOp(n.Op) {
				safe = false
				a.addNode(Dangerous, "arith.assign", n, "arithmetic assignment changes a variable")
			}
		case *syntax.UnaryArithm:
			if n.Op == syntax.Inc || n.Op == syntax.Dec {
				safe = false
				a.addNode(Dangerous, "arith.assign", n, "arithmetic increment changes a variable")
			}
		}
		return true
	})
	return safe
}

func isAssignOp(op syntax.BinAritOperator) bool {
	switch op {
	case syntax.Assgn, syntax.AddAssgn, syntax.SubAssgn, syntax.MulAssgn, syntax.QuoAssgn,
		syntax.RemAssgn, syntax.AndAssgn, syntax.OrAssgn, syntax.XorAssgn, syntax.ShlAssgn, syntax.ShrAssgn:
		return true
	}
	return false
}

func isNumberLit(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= '0' && c <= '9' || c == 'x' || c == 'X' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F' || c == '#') {
			return false
		}
	}
	return s[0] >= '0' && s[0] <= '9'
}

// testExpr checks a [[ ]] expression.
func (a *analyzer) testExpr(e syntax.TestExpr) {
	switch e := e.(type) {
	case *syntax.BinaryTest:
		switch e.Op {
		case syntax.TsEql, syntax.TsNeq, syntax.TsLeq, syntax.TsGeq, syntax.TsLss, syntax.TsGtr:
			for _, side := range []syntax.TestExpr{e.X, e.Y} {
				if w, ok := side.(*syntax.Word); ok {
					fs := a.words([]*syntax.Word{w})
					if len(fs) != 1 || fs[0].unknown() || !isInteger(fs[0].val) {
						a.addNode(Dangerous, "arith.test", w, "operands of -eq and friends in [[ ]] are evaluated as arithmetic, whose subscripts can run commands")
					}
					continue
				}
				a.testExpr(side)
			}
			return
		}
		a.testExpr(e.X)
		a.testExpr(e.Y)
	case *syntax.UnaryTest:
		if e.Op == syntax.TsVarSet || e.Op == syntax.TsRefVar {
			if w, ok := e.X.(*syntax.Word); ok {
				fs := a.words([]*syntax.Word{w})
				if len(fs) != 1 || fs[0].unknown() || strings.ContainsAny(fs[0].val, "[") {
					a.addNode(Dangerous, "arith.test", w, "a subscript in -v is evaluated as arithmetic and can run commands")
				}
				return
			}
		}
		a.testExpr(e.X)
	case *syntax.ParenTest:
		a.testExpr(e.X)
	case *syntax.Word:
		a.words([]*syntax.Word{e})
	}
}

func isInteger(s string) bool {
	s = strings.TrimSpace(s)
	if s != "" && (s[0] == '-' || s[0] == '+') {
		s = s[1:]
	}
	return isDigits(s)
}

// assign analyses an assignment. prefix is true for NAME=value before a
// command (it only affects that command).
func (a *analyzer) assign(as *syntax.Assign, prefix bool) (safe bool) {
	safe = true
	if as.Index != nil {
		a.arith(as.Index)
		a.addNode(Dangerous, "assign.subscript", as, "an array subscript is evaluated as arithmetic and can run commands")
		safe = false
	}
	if as.Array != nil {
		safe = false
		for _, el := range as.Array.Elems {
			if el.Index != nil {
				a.arith(el.Index)
			}
			if el.Value != nil {
				a.words([]*syntax.Word{el.Value})
			}
		}
	}
	if as.Value != nil {
		fs := a.words([]*syntax.Word{as.Value})
		for _, f := range fs {
			if f.unknown() && !f.glob {
				safe = false
			}
		}
	}
	if as.Append || as.Naked && as.Name == nil {
		safe = false
	}
	if prefix && as.Name != nil && loaderEnv(as.Name.Value) {
		a.unplain = true // the command's name no longer says what runs
	}
	if prefix && as.Name != nil && safe && !harmlessEnv(as.Name.Value) {
		a.addNode(Dangerous, "env.assign", as, "setting "+as.Name.Value+" can change what the command does")
		safe = false
	}
	return safe
}

// call analyses a simple command.
func (a *analyzer) call(c *syntax.CallExpr, s *syntax.Stmt) {
	a.simple++
	if a.simple > a.opts.maxCommands {
		if !a.capHit {
			a.capHit = true
			a.addNode(Dangerous, "cap.commands", c, "more simple commands than the cap; the rest was not analysed")
		}
		return
	}
	if len(c.Args) == 0 {
		for _, as := range c.Assigns {
			a.assign(as, false)
		}
		a.addNode(Dangerous, "assign.shell", c, "assigns shell variables, which changes later commands")
		return
	}
	assignsSafe := true
	for _, as := range c.Assigns {
		if !a.assign(as, true) {
			assignsSafe = false
		}
	}
	_ = assignsSafe
	// Reserve the slot first so that the outer command is listed before
	// the commands of its substitutions.
	idx := len(a.commands)
	a.commands = append(a.commands, nil)
	args := a.words(c.Args)
	argv := make([]string, len(args))
	for i, f := range args {
		argv[i] = f.val
		if f.dynamic {
			a.unplain = true
		}
	}
	a.commands[idx] = argv
	if len(args) == 0 {
		return
	}
	t, off := a.at(c)
	a.judge(&call{args: args, text: t, off: off, stmt: s})
}

// funcDecl: defining a function changes what later words mean; a function
// that calls itself in a pipeline or in the background is a fork bomb.
func (a *analyzer) funcDecl(fd *syntax.FuncDecl) {
	name := ""
	if fd.Name != nil {
		name = fd.Name.Value
	}
	a.unplain = true
	a.addNode(Dangerous, "function.define", fd, "defines the function "+name+", which changes what later commands run")
	if name != "" && forkBomb(name, fd.Body) {
		a.addNode(Forbidden, "fork_bomb", fd, "a function that starts copies of itself in a pipe or in the background is a fork bomb")
	}
	if a.enter(fd) {
		a.stmt(fd.Body)
		a.leave()
	}
}

func forkBomb(name string, body *syntax.Stmt) bool {
	// One walk, keeping a stack of "inside a pipe or background" flags;
	// Walk calls f(nil) after a node's children.
	bomb := false
	var stack []bool
	inside := func() bool { return len(stack) > 0 && stack[len(stack)-1] }
	syntax.Walk(body, func(n syntax.Node) bool {
		if bomb {
			return false
		}
		if n == nil {
			stack = stack[:len(stack)-1]
			return true
		}
		in := inside()
		switch n := n.(type) {
		case *syntax.Stmt:
			in = in || n.Background
		case *syntax.BinaryCmd:
			in = in || n.Op == syntax.Pipe || n.Op == syntax.PipeAll
		case *syntax.CallExpr:
			if in && len(n.Args) > 0 && n.Args[0].Lit() == name {
				bomb = true
				return false
			}
		}
		stack = append(stack, in)
		return true
	})
	return bomb
}
