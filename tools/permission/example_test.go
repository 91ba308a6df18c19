package permission

import "fmt"

// Rules in Claude Code's syntax match the classifier's normalized argv.
func ExampleRules_Evaluate() {
	allow, _ := ParseAll([]string{"Bash(npm run test:*)"}, "user")
	deny, _ := ParseAll([]string{"Read(~/.ssh/**)"}, "user")
	rs := Rules{Allow: allow, Deny: deny}
	ctx := Context{Workspace: "/w", Home: "/home/u"}
	// `npm run test -- -u | tail -3`: every part is allowed (tail is read-only).
	npm := Call{Tool: "Bash", HasCommand: true,
		Commands: [][]string{{"npm", "run", "test", "--", "-u"}, {"tail", "-3"}},
		Parts:    []Part{{Argv: []string{"npm", "run", "test", "--", "-u"}, Class: "dangerous"}, {Argv: []string{"tail", "-3"}, Class: "read_only"}}}
	// `npm run test && curl x`: curl is not.
	chained := Call{Tool: "Bash", HasCommand: true,
		Commands: [][]string{{"npm", "run", "test"}, {"curl", "x"}},
		Parts:    []Part{{Argv: []string{"npm", "run", "test"}, Class: "dangerous"}, {Argv: []string{"curl", "x"}, Class: "dangerous"}}}
	key := Call{Tool: "Read", Kind: "read", Paths: []string{"/home/u/.ssh/id_ed25519"}}
	fmt.Println(rs.Evaluate(ctx, npm).Action, rs.Evaluate(ctx, chained).Action == "", rs.Evaluate(ctx, key).Action)
	// Output: allow true deny
}
