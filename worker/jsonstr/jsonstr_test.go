package jsonstr

import "testing"

func TestEnd(t *testing.T) {
	tests := []struct {
		name string
		data string // the opening quote is data[0]
		want int
	}{
		{"plain", `"abc",1`, 4},
		{"empty string", `"",1`, 1},
		{"escaped quote", `"a\"b"`, 5},
		{"escaped backslash then the end", `"a\\"x"`, 4},
		{"three backslashes then an escaped quote", `"a\\\"b"`, 7},
		{"unterminated", `"abc`, 4},
		{"unterminated after an escaped quote", `"a\"`, 4},
		{"backslashes before the opening quote do not count", `\"a"`, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			from := 1
			if tt.data[0] != '"' {
				from = 2 // the case whose opening quote is data[1]
			}
			if got := End([]byte(tt.data), from); got != tt.want {
				t.Errorf("End(%q, %d) = %d, want %d", tt.data, from, got, tt.want)
			}
		})
	}
}
