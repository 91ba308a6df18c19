// Package webfetch owns the WebFetch tool: fetching one web page on the
// host, through the same egress policy and dialer as sandboxed commands
// (sandbox/egress.Gate), and returning it as Markdown marked as
// untrusted content.
//
// Promises: https only (an http URL is upgraded); every connection,
// redirect hops included, is decided by the Gate (policy, approval,
// address checks, the checked address dialed); a redirect to another
// host is returned to the model (percent-encoded: it is the server's
// text), never followed; at most MaxBytes are
// read and the whole call is bounded by Timeout; HTML is reduced to its
// main content and converted to Markdown, text and JSON are returned as
// they are, anything else is refused; answers are cached for 15 minutes
// and a cached page is given only to a caller the gate allows to reach
// its host at that moment (an approval is asked again);
// the page is wrapped in an untrusted-content block whose closing marker
// cannot appear inside it. agentbox has no model: the prompt is returned
// with the page for the agent to apply. A Fetcher is safe for concurrent
// use.
package webfetch

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"codeberg.org/readeck/go-readability/v2"
	htmltomarkdown "github.com/JohannesKaufmann/html-to-markdown/v2"

	"github.com/agentbox/agentbox/sandbox/egress"
	"github.com/agentbox/agentbox/tools"
)

// CacheTTL is how long a fetched page is reused.
const CacheTTL = 15 * time.Minute

const (
	maxURLLen    = 2000
	maxRedirects = 10
)

// Fetcher fetches pages through a Gate.
type Fetcher struct {
	gate     *egress.Gate
	maxBytes int64
	timeout  time.Duration
	tls      *tls.Config
	audit    egress.AuditFunc
	now      func() time.Time

	mu    sync.Mutex
	cache map[string]cached
}

type cached struct {
	at   time.Time
	page page
}

// Option configures a Fetcher.
type Option func(*Fetcher)

// WithTLSConfig sets the TLS client configuration (tests add their CA).
func WithTLSConfig(c *tls.Config) Option { return func(f *Fetcher) { f.tls = c } }

// WithAudit receives one event per connection the fetcher opened or was
// refused.
func WithAudit(a egress.AuditFunc) Option { return func(f *Fetcher) { f.audit = a } }

// New returns a Fetcher over g reading at most maxBytes per page, each
// call bounded by timeout.
func New(g *egress.Gate, maxBytes int64, timeout time.Duration, opts ...Option) *Fetcher {
	f := &Fetcher{gate: g, maxBytes: maxBytes, timeout: timeout, now: time.Now, cache: map[string]cached{}}
	for _, o := range opts {
		o(f)
	}
	return f
}

// page is what one fetch produced.
type page struct {
	url      string // final URL
	kind     string // markdown, text, json
	body     string
	redirect string // another host's URL the page redirects to
	status   int
	trunc    bool
}

type callerKey struct{}

// client is an http.Client whose every connection goes through the gate
// for the caller in the request's context; it follows no redirect.
func (f *Fetcher) client() *http.Client {
	tr := &http.Transport{
		Proxy:               nil,
		TLSClientConfig:     f.tls,
		TLSHandshakeTimeout: 10 * time.Second,
		DisableKeepAlives:   true,
		ForceAttemptHTTP2:   true,
		DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
			host, ps, err := net.SplitHostPort(addr)
			if err != nil {
				return nil, err
			}
			port, err := strconv.ParseUint(ps, 10, 16)
			if err != nil {
				return nil, err
			}
			c, _ := ctx.Value(callerKey{}).(egress.Caller)
			start := time.Now()
			conn, t, err := f.gate.Connect(ctx, c, host, uint16(port))
			if f.audit != nil {
				ev := egress.Event{Time: start, Call: c.Call, Session: c.Session, Kind: "fetch", Decision: "allow", Duration: time.Since(start)}
				ev.SetTarget(host, uint16(port), t, err)
				if err != nil {
					ev.Decision, ev.Reason = "deny", egress.AsRefusal(err).Reason
				}
				f.audit(ev)
			}
			return conn, err
		},
	}
	return &http.Client{Transport: tr, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

// normalize checks and upgrades a URL.
func normalize(raw string) (*url.URL, error) {
	if len(raw) > maxURLLen {
		return nil, fmt.Errorf("the URL is longer than %d characters", maxURLLen)
	}
	u, err := url.Parse(raw)
	if err != nil || !u.IsAbs() || u.Host == "" {
		return nil, fmt.Errorf("%q is not an absolute http(s) URL", raw)
	}
	switch u.Scheme {
	case "https":
	case "http":
		u.Scheme = "https" // never fetched in the clear
	default:
		return nil, fmt.Errorf("only https:// (and http://, upgraded) URLs can be fetched, not %s://", u.Scheme)
	}
	if u.User != nil {
		return nil, errors.New("URLs with credentials are refused")
	}
	if h, _, err := egress.NormalizeHost(u.Hostname()); err != nil || h == "" {
		return nil, fmt.Errorf("%q is not a valid host name", u.Hostname())
	}
	u.Fragment = ""
	return u, nil
}

// uriText percent-encodes every byte of s that RFC 3986 does not allow
// in a URI. A redirect target is the web server's text shown in
// agentbox's own words, and Go keeps a URL's query as sent (spaces,
// "<", "|"): encoded, it stays a usable URL and reads as nothing else.
func uriText(s string) string {
	const allowed = "-._~:/?#[]@!$&'()*+,;=%"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte(allowed, c) >= 0 {
			b.WriteByte(c)
			continue
		}
		fmt.Fprintf(&b, "%%%02X", c)
	}
	return b.String()
}

func sameHost(a, b *url.URL) bool {
	ha, _, _ := egress.NormalizeHost(a.Hostname())
	hb, _, _ := egress.NormalizeHost(b.Hostname())
	return ha == hb && a.Port() == b.Port()
}

// Fetch fetches raw for caller (from the cache when fresh).
func (f *Fetcher) fetch(ctx context.Context, caller egress.Caller, raw string) (page, error) {
	u, err := normalize(raw)
	if err != nil {
		return page{}, tools.Errorf(tools.ErrValidation, "%v", err)
	}
	key := u.String()
	ctx, cancel := context.WithTimeout(context.WithValue(ctx, callerKey{}, caller), f.timeout)
	defer cancel()
	f.mu.Lock()
	c, ok := f.cache[key]
	f.mu.Unlock()
	if ok && f.now().Sub(c.at) < CacheTTL {
		// The page was fetched for some caller; this one gets it only
		// when the policy (or the person, asked again) lets it reach the
		// host now: an "allow once" is not an allow for the next call.
		if err := f.decide(ctx, caller, u); err != nil {
			return page{}, err
		}
		return c.page, nil
	}
	cl := f.client()
	for hop := 0; ; hop++ {
		p, next, err := f.get(ctx, cl, u)
		if err != nil {
			return page{}, err
		}
		if next == nil {
			f.store(key, p)
			return p, nil
		}
		if next.Scheme == "http" {
			next.Scheme = "https"
		}
		if next.Scheme != "https" || !sameHost(u, next) {
			shown := uriText(next.String())
			if len(shown) > maxURLLen {
				return page{}, tools.Errorf(tools.ErrExecution, "%s redirects (HTTP %d) to another host with a URL longer than %d characters; it was not followed",
					u.Redacted(), p.status, maxURLLen)
			}
			return page{url: u.String(), redirect: shown, status: p.status}, nil
		}
		if hop >= maxRedirects {
			return page{}, tools.Errorf(tools.ErrExecution, "more than %d redirects from %s", maxRedirects, raw)
		}
		u = next
	}
}

// store caches p under key and drops the pages that expired, so that the
// cache holds at most what one CacheTTL fetched.
func (f *Fetcher) store(key string, p page) {
	now := f.now()
	f.mu.Lock()
	defer f.mu.Unlock()
	for k, c := range f.cache {
		if now.Sub(c.at) >= CacheTTL {
			delete(f.cache, k)
		}
	}
	f.cache[key] = cached{at: now, page: p}
}

// decide runs the gate's policy and approval for caller and u's host,
// without resolving or dialing; a refusal is audited like a refused
// connection.
func (f *Fetcher) decide(ctx context.Context, caller egress.Caller, u *url.URL) error {
	port := uint16(443)
	if ps := u.Port(); ps != "" {
		n, err := strconv.ParseUint(ps, 10, 16)
		if err != nil {
			return tools.Errorf(tools.ErrValidation, "bad port in %s", u.Redacted())
		}
		port = uint16(n)
	}
	start := time.Now()
	t, err := f.gate.Decide(ctx, caller, u.Hostname(), port)
	if err == nil {
		return nil
	}
	if f.audit != nil {
		host := t.Host
		if host == "" {
			host = u.Hostname()
		}
		f.audit(egress.Event{Time: start, Call: caller.Call, Session: caller.Session, Kind: "fetch", Host: host, Port: port,
			By: t.Decision.By, Decision: "deny", Reason: egress.AsRefusal(err).Reason, Duration: time.Since(start)})
	}
	return tools.Errorf(tools.ErrPermissionDenied, "%s", egress.AsRefusal(err).Error())
}

// get performs one request; next is the redirect target, if any.
func (f *Fetcher) get(ctx context.Context, cl *http.Client, u *url.URL) (page, *url.URL, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return page{}, nil, tools.Errorf(tools.ErrValidation, "%v", err)
	}
	req.Header.Set("User-Agent", "agentbox-webfetch")
	req.Header.Set("Accept", "text/html, text/markdown, text/plain, application/json;q=0.9, */*;q=0.1")
	resp, err := cl.Do(req)
	if err != nil {
		var r *egress.Refusal
		if errors.As(err, &r) {
			return page{}, nil, tools.Errorf(tools.ErrPermissionDenied, "%s", r.Error())
		}
		if ctx.Err() != nil {
			return page{}, nil, tools.Errorf(tools.ErrTimeout, "fetching %s took longer than %s", u.Redacted(), f.timeout)
		}
		return page{}, nil, tools.Errorf(tools.ErrExecution, "fetching %s failed: %v", u.Redacted(), errors.Unwrap(err))
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		loc, err := resp.Location()
		if err != nil {
			return page{}, nil, tools.Errorf(tools.ErrExecution, "%s answered %s without a usable Location", u.Redacted(), status(resp))
		}
		return page{status: resp.StatusCode}, loc, nil
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return page{}, nil, tools.Errorf(tools.ErrExecution, "%s answered %s", u.Redacted(), status(resp))
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, f.maxBytes+1))
	if err != nil {
		return page{}, nil, tools.Errorf(tools.ErrExecution, "reading %s: %v", u.Redacted(), err)
	}
	p := page{url: u.String(), status: resp.StatusCode}
	if int64(len(body)) > f.maxBytes {
		body, p.trunc = body[:f.maxBytes], true
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch {
	case mt == "text/html" || mt == "application/xhtml+xml" || (mt == "" && looksHTML(body)):
		md, err := toMarkdown(body, u)
		if err != nil {
			return page{}, nil, tools.Errorf(tools.ErrExecution, "converting %s: %v", u.Redacted(), err)
		}
		p.kind, p.body = "markdown", md
	case mt == "application/json" || strings.HasSuffix(mt, "+json"):
		p.kind, p.body = "json", string(body)
	case strings.HasPrefix(mt, "text/") || mt == "application/xml" || strings.HasSuffix(mt, "+xml") || (mt == "" && utf8.Valid(body)):
		p.kind, p.body = "text", string(body)
	default:
		return page{}, nil, tools.Errorf(tools.ErrValidation, "%s is %s, not a web page or text; binary content is not fetched", u.Redacted(), mt)
	}
	if !utf8.ValidString(p.body) {
		p.body = strings.ToValidUTF8(p.body, "\uFFFD")
	}
	return p, nil, nil
}

// status names resp's status by its code only: the reason phrase is the
// server's text, and an error is shown outside the untrusted block.
func status(resp *http.Response) string {
	return strings.TrimSpace(fmt.Sprintf("%d %s", resp.StatusCode, http.StatusText(resp.StatusCode)))
}

func looksHTML(b []byte) bool {
	head := bytes.ToLower(b[:min(len(b), 512)])
	return bytes.Contains(head, []byte("<html")) || bytes.Contains(head, []byte("<!doctype html"))
}

// toMarkdown keeps the page's main content (readability) and converts it
// to Markdown; a page readability finds no article in is converted whole.
func toMarkdown(body []byte, u *url.URL) (string, error) {
	art, err := readability.FromReader(bytes.NewReader(body), u)
	if err == nil && art.Node != nil {
		var b bytes.Buffer
		if err := art.RenderHTML(&b); err == nil && b.Len() > 0 {
			md, err := htmltomarkdown.ConvertString(b.String())
			if err == nil && strings.TrimSpace(md) != "" {
				if t := strings.TrimSpace(art.Title()); t != "" && !strings.HasPrefix(strings.TrimSpace(md), "# ") {
					md = "# " + t + "\n\n" + md
				}
				return md, nil
			}
		}
	}
	return htmltomarkdown.ConvertString(string(body))
}

// closeMarker is the end of the untrusted block; it never appears inside.
const closeMarker = "</untrusted_content>"

var markerRE = regexp.MustCompile(`(?i)<\s*(/?)\s*untrusted_content`)

// wrap fences content as untrusted, escaping anything that would open or
// close the fence.
func wrap(source, content string) string {
	esc := markerRE.ReplaceAllString(content, "&lt;${1}untrusted_content")
	return fmt.Sprintf("<untrusted_content source=%q>\n%s\n%s", source, esc, closeMarker)
}
