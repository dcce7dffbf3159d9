//go:build !linux || fsmcp_portable

package nbio

import "os"

// Pollable returns f: reopening a pipe through /proc is Linux only.
func Pollable(f *os.File, _ int) *os.File { return f }

type rawFile struct{ *os.File }

func raw(*os.File) *rawFile { return nil }

type sockWriter struct{ *os.File }

func socketWriter(*os.File) *sockWriter { return nil }

func register(*rawFile) {}

// Yield does nothing where Reader does not read through the poller.
func Yield() {}
