package frontdoor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"time"
)

// Option configures Require and ListenUnix.
type Option func(*options)

type options struct {
	hint string
	log  *slog.Logger
	uids []uint32
}

func newOptions(opts []Option) options {
	o := options{log: slog.New(slog.DiscardHandler)}
	for _, f := range opts {
		f(&o)
	}
	return o
}

// WithHint is the sentence a refused HTTP client is told about how to get
// the token (e.g. "The token is in FILE; `agentbox setup CLIENT --http
// URL` writes it into a client's config."). It must not contain the token.
func WithHint(hint string) Option { return func(o *options) { o.hint = hint } }

// WithLogger receives one record per refused request or connection (the
// peer, the reason; never a token). Default: nothing is logged.
func WithLogger(l *slog.Logger) Option {
	return func(o *options) {
		if l != nil {
			o.log = l
		}
	}
}

// Require returns a handler that serves a request with next only when it
// carries "Authorization: Bearer <token>" and v accepts the token. Every
// request is checked, including each one on a kept-alive connection. A
// refused request gets 401 with a WWW-Authenticate challenge and a body
// saying why (never echoing what was sent) and, from WithHint, how to get
// the token; when v cannot decide (its token file is unreadable) the
// answer is 503 and the door stays shut. next sees the request without
// its Authorization header. A request still being served is checked
// again every second; once its token no longer opens the door (rotated,
// or the file opened to others) its context is cancelled, which ends an
// event stream or a long call admitted with a revoked token.
func Require(v Verifier, next http.Handler, opts ...Option) http.Handler {
	o := newOptions(opts)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, reason := bearer(r.Header)
		var err error
		if reason == "" {
			if err = v.Verify(tok); err != nil {
				reason = "the bearer token is not this server's current token"
			}
		}
		if reason == "" {
			ctx, cancel := context.WithCancel(r.Context())
			defer cancel() // also ends recheck
			go recheck(ctx, cancel, v, tok, r, o.log)
			r = r.Clone(ctx)
			r.Header.Del("Authorization")
			next.ServeHTTP(w, r)
			return
		}
		if err != nil && !errors.Is(err, ErrWrongToken) {
			o.log.Error("refused a request: cannot check tokens", "remote", r.RemoteAddr, "err", err)
			w.Header().Set("Content-Type", "text/plain; charset=utf-8")
			w.Header().Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, "agentbox: this server cannot read its own token file, so it refuses every request; its log says why.")
			return
		}
		o.log.Warn("refused a request without a valid bearer token", "remote", r.RemoteAddr, "method", r.Method, "path", r.URL.Path, "reason", reason)
		challenge := `Bearer realm="agentbox"`
		if tok != "" {
			challenge += `, error="invalid_token"`
		}
		w.Header().Set("WWW-Authenticate", challenge)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		w.WriteHeader(http.StatusUnauthorized)
		msg := "agentbox: this server needs \"Authorization: Bearer <token>\" on every request; " + reason + "."
		if o.hint != "" {
			msg += "\n" + o.hint
		}
		fmt.Fprintln(w, msg)
	})
}

// recheckEvery is how often a request still being served checks that
// its token still opens the door.
var recheckEvery = time.Second

// recheck ends a request that stays open (an event stream, a long call's
// streamed answer) once the token it was admitted with no longer opens
// the door (rotated, or its file opened to others): cancel ends the
// request's context. It returns when ctx is done (the request ended).
func recheck(ctx context.Context, cancel context.CancelFunc, v Verifier, tok string, r *http.Request, log *slog.Logger) {
	t := time.NewTicker(recheckEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := v.Verify(tok); err != nil {
				log.Warn("ended an open request: its bearer token no longer opens the door", "remote", r.RemoteAddr, "method", r.Method, "path", r.URL.Path)
				cancel()
				return
			}
		}
	}
}

// bearer extracts the token of a single "Authorization: Bearer <token>"
// header, or says (without quoting it) what is wrong with it.
func bearer(h http.Header) (tok, reason string) {
	vals := h.Values("Authorization")
	switch {
	case len(vals) == 0:
		return "", "the request has no Authorization header"
	case len(vals) > 1:
		return "", "the request has more than one Authorization header"
	}
	scheme, rest, _ := strings.Cut(strings.TrimSpace(vals[0]), " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return "", "its Authorization header is not a bearer token"
	}
	tok = strings.TrimSpace(rest)
	if tok == "" {
		return "", "its bearer token is empty"
	}
	return tok, ""
}
