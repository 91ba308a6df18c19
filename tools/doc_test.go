package tools

import (
	"go/ast"
	"go/doc"
	"go/doc/comment"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestDocListsStages: the package doc's "Stages" list names the stages
// NewPipeline chains, in the same order, as doc links that resolve. The
// list was once wrong (the classifier listed after the rules, the protect
// stage missing); this fails when a stage is added, removed or moved
// without the doc.
func TestDocListsStages(t *testing.T) {
	pkg, pipeline := parsePackage(t)
	documented := docStages(t, pkg)
	chained := chainedStages(t, pipeline)
	if !slices.Equal(documented, chained) {
		t.Errorf("the package doc's stage list (doc.go, # Stages) is not what NewPipeline chains; update the list\n doc:         %s\n NewPipeline: %s",
			strings.Join(documented, ", "), strings.Join(chained, ", "))
	}
}

// parsePackage parses this package's non-test files into its
// documentation; pipeline is pipeline.go's syntax tree.
func parsePackage(t *testing.T) (pkg *doc.Package, pipeline *ast.File) {
	t.Helper()
	pkg, files := parseDir(t, ".", "github.com/agentbox/agentbox/tools")
	pipeline = files["pipeline.go"]
	if pipeline == nil {
		t.Fatal("no pipeline.go")
	}
	return pkg, pipeline
}

// parseDir parses the non-test files of the package in dir (import path
// path) into its documentation and returns the syntax trees by file name.
func parseDir(t *testing.T, dir, path string) (*doc.Package, map[string]*ast.File) {
	t.Helper()
	fset := token.NewFileSet()
	var files []*ast.File
	byName := map[string]*ast.File{}
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
		byName[filepath.Base(name)] = f
	}
	if len(files) == 0 {
		t.Fatalf("no Go files in %s", dir)
	}
	pkg, err := doc.NewFromFiles(fset, files, path, doc.PreserveAST)
	if err != nil {
		t.Fatal(err)
	}
	return pkg, byName
}

// docStages returns the symbols the list after the "Stages" heading of
// the package doc links to at the start of each item ("Recv.Name" for a
// method). An item that does not start with a doc link that resolves is
// an error.
func docStages(t *testing.T, pkg *doc.Package) []string {
	t.Helper()
	d := pkg.Parser().Parse(pkg.Doc)
	var list *comment.List
	for i, b := range d.Content {
		if h, ok := b.(*comment.Heading); ok && headingText(h) == "Stages" {
			for _, b := range d.Content[i+1:] {
				if l, ok := b.(*comment.List); ok {
					list = l
					break
				}
			}
		}
	}
	if list == nil {
		t.Fatal(`the package doc has no list after a "Stages" heading`)
	}
	var names []string
	for _, item := range list.Items {
		p, ok := item.Content[0].(*comment.Paragraph)
		if !ok || len(p.Text) == 0 {
			t.Fatalf("stage list item %d is not a paragraph", len(names)+1)
		}
		link, ok := p.Text[0].(*comment.DocLink)
		if !ok || link.ImportPath != "" {
			t.Fatalf("stage list item %d does not start with a doc link to a symbol of this package: %q", len(names)+1, plainText(p.Text))
		}
		if link.Recv != "" {
			names = append(names, link.Recv+"."+link.Name)
		} else {
			names = append(names, link.Name)
		}
	}
	return names
}

func headingText(h *comment.Heading) string { return plainText(h.Text) }

func plainText(text []comment.Text) string {
	var b strings.Builder
	for _, x := range text {
		switch x := x.(type) {
		case comment.Plain:
			b.WriteString(string(x))
		case comment.Italic:
			b.WriteString(string(x))
		case *comment.DocLink:
			b.WriteString("[" + plainText(x.Text) + "]")
		case *comment.Link:
			b.WriteString(plainText(x.Text))
		}
	}
	return b.String()
}

// chainedStages returns the constructors of the stages NewPipeline passes
// to Chain, in order: "AuditStage" for AuditStage(…), "RunningCalls.Stage"
// for a variable last assigned opts.Running.Stage(…) (the receiver named
// by the Options field's type).
func chainedStages(t *testing.T, f *ast.File) []string {
	t.Helper()
	var fn *ast.FuncDecl
	fields := map[string]string{} // Options field → its type's name
	for _, d := range f.Decls {
		switch d := d.(type) {
		case *ast.FuncDecl:
			if d.Recv == nil && d.Name.Name == "NewPipeline" {
				fn = d
			}
		case *ast.GenDecl:
			for _, s := range d.Specs {
				ts, ok := s.(*ast.TypeSpec)
				if !ok || ts.Name.Name != "Options" {
					continue
				}
				for _, fl := range ts.Type.(*ast.StructType).Fields.List {
					typ := fl.Type
					if st, ok := typ.(*ast.StarExpr); ok {
						typ = st.X
					}
					for _, n := range fl.Names {
						if id, ok := typ.(*ast.Ident); ok {
							fields[n.Name] = id.Name
						}
					}
				}
			}
		}
	}
	if fn == nil {
		t.Fatal("no NewPipeline in pipeline.go")
	}
	// The last call assigned to each local variable.
	assigned := map[string]*ast.CallExpr{}
	var chain *ast.CallExpr
	ast.Inspect(fn.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.AssignStmt:
			for i, l := range n.Lhs {
				id, ok := l.(*ast.Ident)
				if !ok || i >= len(n.Rhs) {
					continue
				}
				if call, ok := n.Rhs[i].(*ast.CallExpr); ok {
					assigned[id.Name] = call
				}
			}
		case *ast.CallExpr:
			if id, ok := n.Fun.(*ast.Ident); ok && id.Name == "Chain" {
				chain = n
			}
		}
		return true
	})
	if chain == nil || len(chain.Args) < 2 {
		t.Fatal("NewPipeline does not call Chain with stages")
	}
	var names []string
	for i, arg := range chain.Args[1:] {
		if id, ok := arg.(*ast.Ident); ok {
			if call, ok := assigned[id.Name]; ok {
				arg = call
			}
		}
		call, ok := arg.(*ast.CallExpr)
		if !ok {
			t.Fatalf("stage %d of Chain is not a constructor call or a variable assigned one", i+1)
		}
		switch fun := call.Fun.(type) {
		case *ast.Ident:
			names = append(names, fun.Name)
		case *ast.SelectorExpr:
			// opts.Field.Method(…): the method of the field's type.
			recv, ok := fun.X.(*ast.SelectorExpr)
			if !ok || exprString(recv.X) != "opts" || fields[recv.Sel.Name] == "" {
				t.Fatalf("stage %d of Chain: cannot name the constructor %s", i+1, exprString(fun))
			}
			names = append(names, fields[recv.Sel.Name]+"."+fun.Sel.Name)
		default:
			t.Fatalf("stage %d of Chain: cannot name the constructor", i+1)
		}
	}
	return names
}

// exprString prints an identifier or selector expression.
func exprString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return exprString(e.X) + "." + e.Sel.Name
	}
	return "?"
}

// docLinked are the packages whose documentation uses doc links, relative
// to this one: those a reader of a call's path goes through.
var docLinked = []string{".", "builtin", "workspace", "../sandbox", "../sandbox/docker", "../sandbox/initproc", "../sandbox/egress", "../snapshot"}

// TestDocLinksResolve: every doc link in those packages' documentation
// resolves, so go doc renders it as a link and not as bracketed text: a
// [Name] or [Recv.Name] names an exported symbol of the package, a
// [pkg.Name] an imported package (go/doc checks no further). It fails
// when a linked name is renamed, removed or unexported without its
// mentions.
func TestDocLinksResolve(t *testing.T) {
	for _, dir := range docLinked {
		t.Run(dir, func(t *testing.T) {
			path := "github.com/agentbox/agentbox/" + filepath.ToSlash(filepath.Clean(filepath.Join("tools", dir)))
			pkg, _ := parseDir(t, dir, path)
			checkDocLinks(t, pkg)
		})
	}
}

// checkDocLinks reports each doc link in pkg's documentation that names
// nothing.
func checkDocLinks(t *testing.T, pkg *doc.Package) {
	t.Helper()
	real := pkg.Parser()
	// Anything shaped like a doc link to an exported name is one to
	// this parser.
	loose := &comment.Parser{
		LookupPackage: func(name string) (string, bool) { return "", token.IsIdentifier(name) },
		// Only exported names can be links; "[user]" in prose is text.
		LookupSym: func(recv, name string) bool {
			return token.IsExported(name) && (recv == "" || token.IsExported(recv))
		},
	}
	check := func(where, text string) {
		parsed := real.Parse(text)
		want, got := docLinks(loose.Parse(text)), docLinks(parsed)
		// go/doc checks only that [pkg.Name]'s package is imported; for
		// this module's packages, check the name too.
		for _, l := range docLinkNodes(parsed) {
			rel, ok := strings.CutPrefix(l.ImportPath, "github.com/agentbox/agentbox/")
			if !ok || l.Name == "" {
				continue
			}
			name := l.Name
			if l.Recv != "" {
				name = l.Recv + "." + l.Name
			}
			if !exportedNames(t, rel)[name] {
				t.Errorf("%s: the doc link [%s] names nothing in %s", where, plainText(l.Text), l.ImportPath)
			}
		}
		for _, l := range want {
			if !strings.Contains(l, ".") && !token.IsExported(l) {
				continue // "[user]": prose, or a package link, which go/doc checks
			}
			if !slices.Contains(got, l) {
				t.Errorf("%s: the doc link [%s] names nothing that exists", where, l)
			}
		}
	}
	check("package doc", pkg.Doc)
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			check(strings.Join(v.Names, ", "), v.Doc)
		}
	}
	funcs := func(fs []*doc.Func) {
		for _, f := range fs {
			check(f.Recv+" "+f.Name, f.Doc)
		}
	}
	values(pkg.Consts)
	values(pkg.Vars)
	funcs(pkg.Funcs)
	for _, ty := range pkg.Types {
		check(ty.Name, ty.Doc)
		values(ty.Consts)
		values(ty.Vars)
		funcs(ty.Funcs)
		funcs(ty.Methods)
	}
}

var exported = map[string]map[string]bool{}

// exportedNames are the symbols of the module's package at rel ("config",
// "sandbox/egress"): "Name" and "Type.Method".
func exportedNames(t *testing.T, rel string) map[string]bool {
	t.Helper()
	if names, ok := exported[rel]; ok {
		return names
	}
	pkg, _ := parseDir(t, filepath.Join("..", filepath.FromSlash(rel)), "github.com/agentbox/agentbox/"+rel)
	names := map[string]bool{}
	values := func(vs []*doc.Value) {
		for _, v := range vs {
			for _, n := range v.Names {
				names[n] = true
			}
		}
	}
	values(pkg.Consts)
	values(pkg.Vars)
	for _, f := range pkg.Funcs {
		names[f.Name] = true
	}
	for _, ty := range pkg.Types {
		names[ty.Name] = true
		values(ty.Consts)
		values(ty.Vars)
		for _, f := range ty.Funcs {
			names[f.Name] = true
		}
		for _, m := range ty.Methods {
			names[ty.Name+"."+m.Name] = true
		}
		if st, ok := ty.Decl.Specs[0].(*ast.TypeSpec).Type.(*ast.StructType); ok {
			for _, f := range st.Fields.List {
				for _, n := range f.Names {
					names[ty.Name+"."+n.Name] = true // a field: go doc links it too
				}
			}
		}
	}
	exported[rel] = names
	return names
}

// docLinks returns the text of every doc link in d.
func docLinks(d *comment.Doc) []string {
	var out []string
	for _, l := range docLinkNodes(d) {
		out = append(out, plainText(l.Text))
	}
	return out
}

// docLinkNodes returns every doc link in d.
func docLinkNodes(d *comment.Doc) []*comment.DocLink {
	var out []*comment.DocLink
	var text func([]comment.Text)
	text = func(ts []comment.Text) {
		for _, x := range ts {
			switch x := x.(type) {
			case *comment.DocLink:
				out = append(out, x)
			case *comment.Link:
				text(x.Text)
			}
		}
	}
	var block func(comment.Block)
	block = func(b comment.Block) {
		switch b := b.(type) {
		case *comment.Paragraph:
			text(b.Text)
		case *comment.Heading:
			text(b.Text)
		case *comment.List:
			for _, it := range b.Items {
				for _, c := range it.Content {
					block(c)
				}
			}
		}
	}
	for _, b := range d.Content {
		block(b)
	}
	return out
}
