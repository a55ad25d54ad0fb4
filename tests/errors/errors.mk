# Bad-input tests: lkvm's one-line errors for a fallible user.
.PHONY: check-errors
CHECK_TARGETS += check-errors

check-errors: $(LKVM_BIN) guest-kit
	/usr/bin/python3 -m pytest -q -p no:cacheprovider tests/errors
