package engine

import (
	"fmt"
	"runtime/debug"
)

// recovered ends a panic in one of the application's goroutines by failing
// the application (what names the goroutine: "task 0_1", "poll loop"), so
// that a panic, whether in a Go user's function or in the engine, ends this
// application and never the engine's process or another application on
// it. Use it as the goroutine's first deferred call: defer
// a.recovered("...").
//
// A Go panic is a defect, not a failed record: no error policy applies to
// it. The stack goes to the log, the application's error names the
// goroutine and the panic's value.
func (a *App) recovered(what string) {
	v := recover()
	if v == nil {
		return
	}
	a.log.Error("panic: the application fails, the engine goes on", "application.id", a.cfg.ApplicationID, "in", what, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
	a.fail(fmt.Errorf("engine: %s panicked: %v", what, v))
}

// recoverInto is recovered for a goroutine whose error someone waits for:
// the panic becomes *err (the stack goes to the log; a caller on the other
// side of the wire never sees one).
func (a *App) recoverInto(err *error, what string) {
	v := recover()
	if v == nil {
		return
	}
	a.log.Error("panic", "application.id", a.cfg.ApplicationID, "in", what, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
	*err = fmt.Errorf("engine: %s panicked: %v", what, v)
}
