package main

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/fsmcp/fsmcp/internal/cursorkey"
	"github.com/fsmcp/fsmcp/internal/limits"
	"github.com/fsmcp/fsmcp/internal/names"
	"github.com/fsmcp/fsmcp/internal/toolset"
	"github.com/fsmcp/fsmcp/worker"
)

type options struct {
	cfg     worker.Config
	keyEnv  *string // --cursor-key-env, nil when not given
	rootSet bool    // --root was given
	help    bool
	version bool
}

// A flagSpec is one option: a switch (no value) or a setter for its value.
type flagSpec struct {
	isSwitch bool
	set      func(o *options, v string) error
}

func flags() map[string]flagSpec {
	str := func(f func(o *options, v string)) flagSpec {
		return flagSpec{set: func(o *options, v string) error { f(o, v); return nil }}
	}
	m := map[string]flagSpec{
		"--root": {set: func(o *options, v string) error {
			if o.rootSet {
				return errors.New("--root is given twice; a worker serves one root: to serve several, list them in a manifest for fsmcp-supervisor")
			}
			o.cfg.Root, o.rootSet = v, true
			return nil
		}},
		"--include":            str(func(o *options, v string) { o.cfg.Include = append(o.cfg.Include, v) }),
		"--exclude":            str(func(o *options, v string) { o.cfg.Exclude = append(o.cfg.Exclude, v) }),
		"--no-default-exclude": {isSwitch: true, set: func(o *options, _ string) error { o.cfg.NoDefaultExclude = true; return nil }},
		"--cursor-key-env":     str(func(o *options, v string) { o.keyEnv = &v }),
		"--name":               str(func(o *options, v string) { o.cfg.Name = v }),
		"--tools": {set: func(o *options, v string) error {
			mask, err := toolset.Parse(v)
			if err != nil {
				return fmt.Errorf("--tools: %v", err)
			}
			o.cfg.Tools = mask
			return nil
		}},
	}
	for _, l := range limits.Table {
		m[l.Flag()] = flagSpec{set: func(o *options, v string) error {
			n, err := integer(l.Flag(), v, l.Min == 0)
			if err != nil {
				return err
			}
			l.Set(&o.cfg.Limits, n)
			return nil
		}}
	}
	return m
}

var digits = regexp.MustCompile(`^[0-9]+$`)

// integer parses an integer option's value: decimal digits only, positive
// (or zero where zeroOK), at most limits.MaxInteger.
func integer(flag, v string, zeroOK bool) (int64, error) {
	if !digits.MatchString(v) {
		return 0, fmt.Errorf("%s must be a positive integer", flag)
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n > limits.MaxInteger {
		return 0, fmt.Errorf("%s is too large", flag)
	}
	if n == 0 && !zeroOK {
		return 0, fmt.Errorf("%s must be a positive integer", flag)
	}
	return n, nil
}

// parse reads the command line. --help and --version win over everything
// else, bad options included (the first of the two given wins); otherwise
// the first bad option is the error. An option's value is the next
// argument unless that starts with "--", or follows "=" in --flag=value.
func parse(args []string) (*options, error) {
	o := &options{cfg: worker.Config{Limits: worker.DefaultLimits}}
	for _, a := range args {
		switch a {
		case "--help":
			o.help = true
			return o, nil
		case "--version":
			o.version = true
			return o, nil
		}
	}
	specs := flags()
	for i := 0; i < len(args); i++ {
		a := args[i]
		name, value, hasValue := strings.Cut(a, "=")
		spec, known := specs[name]
		if !strings.HasPrefix(a, "--") || !known || (spec.isSwitch && hasValue) {
			return nil, fmt.Errorf("unknown option %s", a)
		}
		if !spec.isSwitch && !hasValue {
			if i+1 == len(args) || strings.HasPrefix(args[i+1], "--") {
				return nil, fmt.Errorf("missing value for %s", name)
			}
			i++
			value = args[i]
		}
		if err := spec.set(o, value); err != nil {
			return nil, err
		}
	}
	return o, nil
}

// base64url is the alphabet of an unpadded base64url value.
var base64url = regexp.MustCompile(`^[A-Za-z0-9_-]+$`)

// cursorKey reads the deterministic cursor key from the variable named by
// --cursor-key-env, with the texts of docs/reference.md, Worker startup;
// none shows the value.
func cursorKey(name string, lookup func(string) (string, bool)) ([]byte, error) {
	if !names.Env(name) {
		return nil, errors.New("--cursor-key-env must name an environment variable")
	}
	v, _ := lookup(name)
	if !base64url.MatchString(v) {
		return nil, errors.New("cursor key environment variable is missing, empty, or malformed")
	}
	key, err := cursorkey.Decode(v)
	if err != nil {
		return nil, errors.New("cursor key environment variable is malformed or contains fewer than 32 bytes")
	}
	return key, nil
}
