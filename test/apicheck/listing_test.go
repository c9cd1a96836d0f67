package apicheck

import (
	"fmt"
	"go/types"
	"slices"
	"strings"

	"golang.org/x/tools/go/packages"
)

// listing loads the packages at the import paths pkgs, which belong to the
// module modPath rooted at dir, and returns their exported API, one line
// per feature, sorted (see the package doc for the form). buildFlags go to
// the go command that builds the export data (-race, so that a -race test
// run finds its own builds in the cache).
func listing(dir, modPath string, buildFlags []string, pkgs ...string) ([]string, error) {
	cfg := &packages.Config{
		Mode:       packages.NeedName | packages.NeedTypes,
		Dir:        dir,
		BuildFlags: buildFlags,
	}
	loaded, err := packages.Load(cfg, pkgs...)
	if err != nil {
		return nil, err
	}
	if len(loaded) != len(pkgs) {
		return nil, fmt.Errorf("loaded %d packages for %d import paths", len(loaded), len(pkgs))
	}
	listed := make(map[string]bool, len(pkgs))
	for _, p := range pkgs {
		listed[p] = true
	}
	w := &walker{modPath: modPath, listed: listed, seen: make(map[string]bool)}
	for _, p := range loaded {
		if len(p.Errors) > 0 {
			return nil, fmt.Errorf("loading %s: %v", p.PkgPath, p.Errors[0])
		}
		if p.Types == nil {
			return nil, fmt.Errorf("loading %s: no type information", p.PkgPath)
		}
		w.pkg(p.Types)
	}
	slices.Sort(w.lines)
	return w.lines, nil
}

// walker collects the features of the packages it is shown.
type walker struct {
	modPath string          // immutable
	listed  map[string]bool // immutable: the import paths being listed

	cur    *types.Package // the package being walked
	prefix string         // "pkg <path relative to the module>, "
	lines  []string
	seen   map[string]bool // lines already emitted
}

func (w *walker) emit(format string, args ...any) {
	line := w.prefix + fmt.Sprintf(format, args...)
	if !w.seen[line] {
		w.seen[line] = true
		w.lines = append(w.lines, line)
	}
}

func (w *walker) pkg(p *types.Package) {
	w.cur = p
	w.prefix = "pkg " + strings.TrimPrefix(strings.TrimPrefix(p.Path(), w.modPath), "/") + ", "
	scope := p.Scope()
	for _, name := range scope.Names() { // sorted
		obj := scope.Lookup(name)
		if !obj.Exported() {
			continue
		}
		switch obj := obj.(type) {
		case *types.Const:
			w.emit("const %s %s = %s", name, w.typ(obj.Type()), obj.Val().ExactString())
		case *types.Var:
			w.emit("var %s %s", name, w.typ(obj.Type()))
		case *types.Func:
			sig := obj.Type().(*types.Signature)
			w.emit("func %s%s%s", name, w.typeParams(sig.TypeParams()), w.signature(sig))
		case *types.TypeName:
			w.typeName(obj)
		}
	}
}

// typeName emits a defined type or an alias: its kind, its fields or
// interface methods, and its method set.
func (w *walker) typeName(obj *types.TypeName) {
	name := obj.Name()
	if alias, ok := obj.Type().(*types.Alias); ok {
		w.emit("type %s%s = %s", name, w.typeParams(alias.TypeParams()), w.typ(alias.Rhs()))
		// An alias of a type that is listed nowhere else (an internal one)
		// brings that type's fields and methods into the API: list them
		// under the alias's name.
		if named, ok := types.Unalias(obj.Type()).(*types.Named); ok && w.expand(named) {
			w.members(name, named)
		}
		return
	}
	named, ok := obj.Type().(*types.Named)
	if !ok {
		return
	}
	decl := name + w.typeParams(named.TypeParams())
	switch u := named.Underlying(); u.(type) {
	case *types.Struct:
		w.emit("type %s struct", decl)
	case *types.Interface:
		w.emit("type %s interface", decl)
	default:
		w.emit("type %s %s", decl, w.typ(u))
	}
	w.members(decl, named)
}

// members emits the fields or interface methods of named, and its method
// set, under the type declared as decl.
func (w *walker) members(decl string, named *types.Named) {
	switch u := named.Underlying().(type) {
	case *types.Struct:
		w.fields(decl, u)
	case *types.Interface:
		w.interfaceMethods(decl, u)
		return // an interface's methods are its method set
	}

	recv := recvString(decl, named)
	value := types.NewMethodSet(named)
	ptr := types.NewMethodSet(types.NewPointer(named))
	for sel := range ptr.Methods() {
		m := sel.Obj()
		if !m.Exported() {
			continue
		}
		if len(sel.Index()) > 1 && !w.expandPath(named, sel.Index()) {
			continue // implied by the "embedded" line of an exported type
		}
		r := "*" + recv
		if value.Lookup(m.Pkg(), m.Name()) != nil {
			r = recv
		}
		w.emit("method (%s) %s%s", r, m.Name(), w.signature(m.Type().(*types.Signature)))
	}
}

// fields emits a struct's exported fields, and those promoted from its
// embedded fields whose types are listed nowhere else.
func (w *walker) fields(decl string, s *types.Struct) {
	for f := range s.Fields() {
		if f.Embedded() {
			if f.Exported() {
				w.emit("type %s struct, embedded %s", decl, w.typ(f.Type()))
			}
			if named := namedOf(f.Type()); named != nil && w.expand(named) {
				if inner, ok := named.Underlying().(*types.Struct); ok {
					w.fields(decl, inner)
				}
			}
			continue
		}
		if f.Exported() {
			w.emit("type %s struct, %s %s", decl, f.Name(), w.typ(f.Type()))
		}
	}
}

func (w *walker) interfaceMethods(decl string, iface *types.Interface) {
	if !iface.IsMethodSet() { // a constraint with type terms
		w.emit("type %s interface, %s", decl, w.typ(iface))
	}
	for m := range iface.Methods() { // embedded interfaces' too, sorted
		if m.Exported() {
			w.emit("type %s interface, %s%s", decl, m.Name(), w.signature(m.Type().(*types.Signature)))
		} else {
			w.emit("type %s interface, unexported methods", decl)
		}
	}
}

// expand reports whether named's members must be listed where it is
// embedded or aliased: it is listed nowhere else, being unexported or in a
// package of this module that is not listed (an internal one). Types of
// other modules (sync.Mutex, say) are their own module's API.
func (w *walker) expand(named *types.Named) bool {
	obj := named.Obj()
	if obj.Pkg() == nil {
		return false // error's Error
	}
	path := obj.Pkg().Path()
	if path != w.modPath && !strings.HasPrefix(path, w.modPath+"/") {
		return false
	}
	return !obj.Exported() || !w.listed[path]
}

// expandPath reports whether a method promoted along the embedding path
// index (a types.Selection's Index) comes through an embedded type listed
// nowhere else.
func (w *walker) expandPath(named *types.Named, index []int) bool {
	t := types.Type(named)
	for _, i := range index[:len(index)-1] {
		s, ok := derefUnder(t).(*types.Struct)
		if !ok {
			return false
		}
		t = s.Field(i).Type()
		if n := namedOf(t); n != nil && !w.expand(n) {
			return false // an exported, listed type: its own lines say it
		}
	}
	return true
}

// signature returns sig as Go writes it after a function's name, without
// parameter names: "(int, ...string) (bool, error)".
func (w *walker) signature(sig *types.Signature) string {
	var b strings.Builder
	b.WriteByte('(')
	params := sig.Params()
	for i := range params.Len() {
		if i > 0 {
			b.WriteString(", ")
		}
		t := params.At(i).Type()
		if sig.Variadic() && i == params.Len()-1 {
			b.WriteString("...")
			t = t.(*types.Slice).Elem()
		}
		b.WriteString(w.typ(t))
	}
	b.WriteByte(')')
	switch res := sig.Results(); res.Len() {
	case 0:
	case 1:
		b.WriteString(" " + w.typ(res.At(0).Type()))
	default:
		b.WriteString(" (")
		for i := range res.Len() {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString(w.typ(res.At(i).Type()))
		}
		b.WriteByte(')')
	}
	return b.String()
}

// typeParams returns "[K comparable, V any]", or "" for none.
func (w *walker) typeParams(tps *types.TypeParamList) string {
	if tps.Len() == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteByte('[')
	for i := range tps.Len() {
		if i > 0 {
			b.WriteString(", ")
		}
		tp := tps.At(i)
		b.WriteString(tp.Obj().Name() + " " + w.typ(tp.Constraint()))
	}
	b.WriteByte(']')
	return b.String()
}

// typ writes t with the package being walked unqualified and others
// qualified by their name: "*Timer", "time.Duration".
func (w *walker) typ(t types.Type) string {
	return types.TypeString(t, func(p *types.Package) string {
		if p == w.cur {
			return ""
		}
		return p.Name()
	})
}

// recvString returns the receiver form of a type declared as decl:
// "Watchers[K]" for "Watchers[K comparable]".
func recvString(decl string, named *types.Named) string {
	tps := named.TypeParams()
	if tps.Len() == 0 {
		return decl
	}
	names := make([]string, tps.Len())
	for i := range tps.Len() {
		names[i] = tps.At(i).Obj().Name()
	}
	return named.Obj().Name() + "[" + strings.Join(names, ", ") + "]"
}

func derefUnder(t types.Type) types.Type {
	if p, ok := types.Unalias(t).(*types.Pointer); ok {
		t = p.Elem()
	}
	return t.Underlying()
}

func namedOf(t types.Type) *types.Named {
	if p, ok := types.Unalias(t).(*types.Pointer); ok {
		t = p.Elem()
	}
	n, _ := types.Unalias(t).(*types.Named)
	return n
}
