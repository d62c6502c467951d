package text

import "testing"

func TestPlural(t *testing.T) {
	for _, tt := range []struct {
		n    int
		want string
	}{{0, "0 shards"}, {1, "1 shard"}, {2, "2 shards"}, {10000, "10000 shards"}} {
		if got := Plural(tt.n, "shard"); got != tt.want {
			t.Errorf("Plural(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestList(t *testing.T) {
	for _, tt := range []struct {
		items []string
		max   int
		want  string
	}{
		{nil, 0, "none"},
		{[]string{"a"}, 0, "a"},
		{[]string{"a", "b"}, 0, "a and b"},
		{[]string{"a", "b", "c"}, 0, "a, b and c"},
		{[]string{"a", "b", "c"}, 3, "a, b and c"},
		{[]string{"a", "b", "c"}, 2, "a, b and 1 more"},
		{[]string{"a", "b", "c", "d", "e"}, 1, "a and 4 more"},
	} {
		if got := List(tt.items, tt.max); got != tt.want {
			t.Errorf("List(%q, %d) = %q, want %q", tt.items, tt.max, got, tt.want)
		}
	}
}

func TestOrList(t *testing.T) {
	for _, tt := range []struct {
		items []string
		want  string
	}{{nil, ""}, {[]string{"a"}, "a"}, {[]string{"a", "b"}, "a or b"}, {[]string{"a", "b", "c"}, "a, b or c"}} {
		if got := OrList(tt.items); got != tt.want {
			t.Errorf("OrList(%q) = %q, want %q", tt.items, got, tt.want)
		}
	}
}

func TestBytes(t *testing.T) {
	for _, tt := range []struct {
		n    float64
		want string
	}{
		{-3, "0 B"}, {0, "0 B"}, {0.4, "0 B"}, {1, "1 B"}, {5.6, "6 B"}, {512, "512 B"}, {1023, "1023 B"},
		{1024, "1.0 KiB"}, {1536, "1.5 KiB"}, {1 << 20, "1.0 MiB"}, {2.5 * (1 << 20), "2.5 MiB"},
		{1 << 30, "1.00 GiB"}, {1.25 * (1 << 30), "1.25 GiB"},
	} {
		if got := Bytes(tt.n); got != tt.want {
			t.Errorf("Bytes(%v) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

func TestOneLine(t *testing.T) {
	if got := OneLine("  a\n\tb  c\r\n"); got != "a b c" {
		t.Errorf("OneLine = %q", got)
	}
}

func TestOrDash(t *testing.T) {
	if OrDash("") != "-" || OrDash("x") != "x" {
		t.Errorf("OrDash: %q, %q", OrDash(""), OrDash("x"))
	}
}
