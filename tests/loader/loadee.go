// SPDX-License-Identifier: MIT
// loadee.go - test_loader.c's Go program (go build: statically linked):
// goroutines sleeping on several threads, "ready pid=PID marker=ADDR",
// the end of standard input awaited, then "done ..." and exit status 7.
package main

import (
	"fmt"
	"io"
	"os"
	"time"
)

var marker uint64 = 0x5eed1234abcd

func main() {
	done := make(chan bool)
	for i := 0; i < 4; i++ {
		go func() {
			for {
				select {
				case <-done:
					return
				default:
					time.Sleep(5 * time.Millisecond)
				}
			}
		}()
	}
	fmt.Printf("ready pid=%d marker=%p\n", os.Getpid(), &marker)
	io.Copy(io.Discard, os.Stdin)
	close(done)
	fmt.Printf("done mode=go errors=0 marker=%x\n", marker)
	os.Exit(7)
}
