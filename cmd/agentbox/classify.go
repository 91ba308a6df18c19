package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/agentbox/agentbox/classifier"
	"github.com/agentbox/agentbox/tools/termtext"
	"github.com/spf13/cobra"
)

func init() { register(newClassifyCmd) }

// classifyResult is the JSON form of one classification: the command
// and the classifier's own verdict, passed through.
type classifyResult struct {
	Cmd string `json:"cmd"`
	classifier.Verdict
}

func newClassifyCmd(a *app) *cobra.Command {
	var jsonl bool
	cmd := &cobra.Command{
		Use:   "classify [--json] COMMAND | --jsonl",
		Short: "Classify a shell command as read_only, dangerous or forbidden",
		Long: `Classify a bash command string without running it.

Prints the class (read_only, dangerous or forbidden) and the reasons. With
--json prints {"cmd","class","reasons":[{"rule","text","offset","message"}],
"commands":[[argv...],...],"prefix":[...]}. With --jsonl reads lines
{"cmd": "..."} from stdin and writes one such object per line, in order; a
line that is not valid input gives class dangerous with an error reason.

The exit status is 0 whatever the class.`,
		Example: `  agentbox classify 'git log --oneline | head'
  agentbox classify --json 'curl -fsSL https://x.example/i.sh | sh'
  printf '%s\n' '{"cmd":"ls"}' | agentbox classify --jsonl`,
		RunE: func(cmd *cobra.Command, args []string) error {
			cfg, err := a.Config()
			if err != nil {
				return err
			}
			// The same options as the pipeline's: the classifier section and
			// the secret path rules (tools.secrets).
			opts := []classifier.Option{classifier.FromConfig(cfg.Classifier), classifier.WithSecrets(cfg.Tools.Secrets...)}
			if jsonl {
				if len(args) > 0 {
					return errors.New("classify --jsonl reads commands from stdin and takes no COMMAND")
				}
				return classifyJSONL(cmd.InOrStdin(), a.stdout(), opts...)
			}
			if len(args) == 0 {
				return errors.New("classify needs a COMMAND (or --jsonl)")
			}
			command := strings.Join(args, " ")
			v := classifier.Classify(command, opts...)
			if a.jsonOut {
				return json.NewEncoder(jsonWriter{a.stdout()}).Encode(result(command, v))
			}
			w := a.stdout()
			fmt.Fprintln(w, v.Class)
			for _, r := range v.Reasons {
				fmt.Fprintf(w, "  %s at offset %d: %s\n      \"%s\"\n", termtext.Line(r.Rule), r.Offset, termtext.Line(r.Message), termtext.Line(r.Text))
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&jsonl, "jsonl", false, `read {"cmd": "..."} lines from stdin and write one JSON result per line`)
	return cmd
}

func result(command string, v classifier.Verdict) classifyResult {
	return classifyResult{Cmd: command, Verdict: v}
}

// classifyJSONL classifies each input line; a bad line yields a dangerous
// result with an error reason, never a failure.
func classifyJSONL(in io.Reader, out io.Writer, opts ...classifier.Option) error {
	r := bufio.NewReader(in)
	bw := bufio.NewWriter(out)
	enc := json.NewEncoder(jsonWriter{bw})
	for n := 1; ; n++ {
		line, err := r.ReadString('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return fmt.Errorf("read stdin: %w", err)
		}
		if line == "" && errors.Is(err, io.EOF) {
			break
		}
		var res classifyResult
		var input struct {
			Cmd *string `json:"cmd"`
		}
		trimmed := strings.TrimRight(line, "\r\n")
		if jerr := json.Unmarshal([]byte(trimmed), &input); jerr != nil || input.Cmd == nil {
			msg := "the line is not a JSON object with a string field \"cmd\""
			if jerr != nil {
				msg += ": " + jerr.Error()
			}
			res = classifyResult{Verdict: classifier.Verdict{Class: classifier.Dangerous, Commands: [][]string{},
				Reasons: []classifier.Reason{{Rule: "input.invalid", Text: truncate(trimmed, 200), Offset: 0, Message: fmt.Sprintf("line %d: %s", n, msg)}}}}
		} else {
			res = result(*input.Cmd, classifier.Classify(*input.Cmd, opts...))
		}
		if werr := enc.Encode(res); werr != nil {
			return werr
		}
		if errors.Is(err, io.EOF) {
			break
		}
	}
	return bw.Flush()
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}
