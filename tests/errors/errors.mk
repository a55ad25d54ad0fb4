# Bad-input tests: lkvm's one-line errors for a fallible user.
.PHONY: check-errors
CHECK_TARGETS += check-errors

# lkvm.static for its -n user message: the plain one also in a sanitized
# run (a sanitizer build cannot be static); a Debian kernel for a real
# bzImage cut short.
check-errors: $(LKVM_BIN) guest-kit
	$(MAKE) --no-print-directory SANITIZE= lkvm.static
	scripts/fetch-kernel.sh generic >/dev/null
	$(TIER_RUN) errors tests/errors
