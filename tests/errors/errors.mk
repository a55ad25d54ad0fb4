# Bad-input tests: lkvm's one-line errors for a fallible user.
.PHONY: check-errors
CHECK_TARGETS += check-errors

# lkvm.static for its -n user message; a sanitizer build cannot be static.
check-errors: $(LKVM_BIN) guest-kit $(if $(filter 1,$(SANITIZE)),,lkvm.static)
	/usr/bin/python3 -m pytest -q -p no:cacheprovider tests/errors
