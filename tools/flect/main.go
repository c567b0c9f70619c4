// Command flect prints, for every line read on standard input, the plural that
// github.com/gobuffalo/flect gives for it: one output line per input line, in order.
// kro-graph's differential test (crates/kro-graph/tests/plurals.rs) compares these answers
// with kro_graph::names::pluralize, which must name generated CRDs as upstream kro does.
//
// flect reads extra inflections and acronyms from ./inflections.json, ./acronyms.json or the
// files named by INFLECT_PATH and ACRONYMS_PATH when it starts; any of those would change its
// answers, so this command refuses to run when one is present.
package main

import (
	"bufio"
	"fmt"
	"os"

	"github.com/gobuffalo/flect"
)

func main() {
	for _, name := range []string{"INFLECT_PATH", "ACRONYMS_PATH"} {
		if _, set := os.LookupEnv(name); set {
			fail(fmt.Errorf("%s is set; flect would load custom inflections", name))
		}
	}
	for _, name := range []string{"inflections.json", "acronyms.json"} {
		if _, err := os.Stat(name); err == nil {
			fail(fmt.Errorf("./%s exists; flect would load custom inflections", name))
		}
	}
	in := bufio.NewScanner(os.Stdin)
	out := bufio.NewWriter(os.Stdout)
	for in.Scan() {
		fmt.Fprintln(out, flect.Pluralize(in.Text()))
	}
	if err := in.Err(); err != nil {
		fail(err)
	}
	if err := out.Flush(); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "flect:", err)
	os.Exit(1)
}
