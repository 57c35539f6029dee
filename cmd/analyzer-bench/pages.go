package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"sort"
	"strings"
	"time"
)

// pages times the web pages of `analyzer serve` on db (which should hold
// many attempts) while `analyzer replay` of writerInput writes to the same
// database: the attempts list, an attempt, the ladders, a ladder page and
// the failure groups, each requested in turn until the replay ends (at
// least rounds times).
// It prints p50/p99/max per page.
func pages(bin, db, writerInput string, rounds int) error {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	addr := l.Addr().String()
	l.Close()
	serve := exec.Command(bin, "serve", "--db", db, "--no-journal", "--listen", addr)
	serve.Stderr = os.Stderr
	if err := serve.Start(); err != nil {
		return err
	}
	defer func() { _ = serve.Process.Kill(); _ = serve.Wait() }()
	base := "http://" + addr
	for start := time.Now(); ; {
		if resp, err := http.Get(base + "/healthz"); err == nil {
			resp.Body.Close()
			break
		}
		if time.Since(start) > 30*time.Second {
			return fmt.Errorf("serve did not answer")
		}
		time.Sleep(50 * time.Millisecond)
	}
	var list struct {
		Attempts []struct {
			ID string `json:"id"`
		} `json:"attempts"`
	}
	if err := getJSON(base+"/api/v1/attempts?limit=20", &list); err != nil || len(list.Attempts) == 0 {
		return fmt.Errorf("no attempts in %s: %v", db, err)
	}
	var ladders []struct {
		ID string `json:"id"`
	}
	var lw struct {
		Ladders *[]struct {
			ID string `json:"id"`
		} `json:"ladders"`
	}
	lw.Ladders = &ladders
	if err := getJSON(base+"/api/v1/ladders", &lw); err != nil || len(ladders) == 0 {
		return fmt.Errorf("no ladders: %v", err)
	}
	urls := map[string]string{
		"attempts": "/",
		"attempt":  "/attempts/" + list.Attempts[len(list.Attempts)/2].ID,
		"ladders":  "/ladders",
		"ladder":   "/ladders/" + ladders[len(ladders)/2].ID,
		"failures": "/failures",
	}
	writer := exec.Command(bin, "replay", "--db", db, writerInput)
	if err := writer.Start(); err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() { done <- writer.Wait() }()
	lat := map[string][]time.Duration{}
	writing := true
	for i := 0; writing || i < rounds; i++ {
		for name, u := range urls {
			start := time.Now()
			resp, err := http.Get(base + u)
			if err != nil {
				return err
			}
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 {
				return fmt.Errorf("%s: %d", u, resp.StatusCode)
			}
			lat[name] = append(lat[name], time.Since(start))
		}
		select {
		case err := <-done:
			if err != nil {
				return fmt.Errorf("replay: %w", err)
			}
			writing = false
		default:
		}
	}
	var names []string
	for n := range lat {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Printf("pages while a replay writes to the database (%d requests each):\n", len(lat[names[0]]))
	for _, n := range names {
		d := lat[n]
		sort.Slice(d, func(i, j int) bool { return d[i] < d[j] })
		pct := func(p float64) time.Duration { return d[int(p*float64(len(d)-1))] }
		fmt.Printf("  %-9s p50 %8v  p99 %8v  max %8v\n", n, pct(0.5).Round(100*time.Microsecond), pct(0.99).Round(100*time.Microsecond), d[len(d)-1].Round(100*time.Microsecond))
	}
	return nil
}

func getJSON(url string, v any) error {
	resp, err := http.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("%s: %d %s", url, resp.StatusCode, strings.TrimSpace(string(b)))
	}
	return json.NewDecoder(resp.Body).Decode(v)
}
