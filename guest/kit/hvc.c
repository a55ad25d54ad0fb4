// SPDX-License-Identifier: GPL-2.0
/*
 * hvc.elf: lkvm's virtio-console (--console virtio) driven from inside the
 * guest, on the transport= the command line names. Status lines go to COM1
 * as in every kit guest ("hvc: ..."); the device's own output is marked
 * "HVC" so the test tells the two apart on lkvm's stdout.
 *
 *  1. an emergency write (F_EMERG_WRITE) before any queue runs;
 *  2. a line split over three buffers of one chain;
 *  3. bulk=N: N lines of 4 KiB, one chain each, each used only once lkvm
 *     has taken it whole (a reader that stops holds them, nothing lost);
 *     too_big: one chain larger than lkvm's console queue;
 *  4. what the user types arrives in the receive buffers: "ping\n", echoed;
 *  5. lkvm debug --sysrq KEY arrives as Ctrl-O then KEY, as Linux's hvc
 *     takes Magic SysRq.
 */
#include "kit.h"
#include "virtio.h"
#include "virtio_pci.h"

#define VIRTIO_ID_CONSOLE	3
#define F_EMERG_WRITE		(1ull << 2)
#define EMERG_WR		8	/* offset in the config space */
#define RX_BUFS			4
#define RX_LEN			64
#define LINE			4096
#define TIMEOUT_US		30000000

static struct vio_dev dev;
static struct vio_queue rxq, txq;
static uint8_t *rx_buf[RX_BUFS];
static int rx_head[RX_BUFS];

static bool find_console(void)
{
	enum vio_transport t = vio_cmdline_transport(VIO_PCI);

	if (t != VIO_MMIO)
		return vio_pci_find(&dev, t == VIO_PCI_LEGACY);
	return vio_find(&dev, 1) == 1;
}

/* One output chain; true once the device used it. */
static bool send(const struct vio_buf *bufs, unsigned int n)
{
	uint32_t id, len;

	if (!kit_check(vio_add(&txq, bufs, n, false) >= 0, "tx ring full"))
		return false;
	vio_kick(&txq);
	return kit_check(vio_wait_used(&txq, TIMEOUT_US, true, &id, &len) ==
			 VIO_WAIT_USED, "output not taken in 30 s");
}

static bool send_text(const char *s)
{
	struct vio_buf b = { (uintptr_t)s, strlen(s), false };

	return send(&b, 1);
}

static void post_rx(unsigned int i)
{
	struct vio_buf b = { (uintptr_t)rx_buf[i], RX_LEN, true };

	rx_head[i] = vio_add(&rxq, &b, 1, false);
}

/* The next n typed bytes, across receive buffers; how many came. */
static unsigned int receive(char *out, unsigned int n)
{
	unsigned int got = 0;
	uint32_t id, len;

	while (got < n &&
	       vio_wait_used(&rxq, TIMEOUT_US, true, &id, &len) == VIO_WAIT_USED) {
		unsigned int i;

		for (i = 0; i < RX_BUFS; i++)
			if (rx_head[i] == (int)id)
				break;
		if (!kit_check(i < RX_BUFS && len <= RX_LEN,
			       "a receive buffer we never gave: id %x len %u",
			       id, len))
			break;
		for (uint32_t k = 0; k < len && got < n; k++)
			out[got++] = rx_buf[i][k];
		post_rx(i);
		vio_kick(&rxq);
	}
	return got;
}

static void check_output(void)
{
	static const char a[] = "HVC three ", b[] = "buffers, one ",
			  c[] = "chain\n";
	struct vio_buf three[3] = {
		{ (uintptr_t)a, sizeof(a) - 1, false },
		{ (uintptr_t)b, sizeof(b) - 1, false },
		{ (uintptr_t)c, sizeof(c) - 1, false },
	};

	send_text("HVC hello from the guest\n");
	send(three, 3);
}

static void check_bulk(uint64_t lines)
{
	char *line = kit_malloc(LINE);

	for (uint64_t i = 0; i < lines; i++) {
		struct vio_buf b = { (uintptr_t)line, LINE, false };
		int n = kit_snprintf(line, LINE, "HVC bulk %04llu ",
				     (unsigned long long)i);

		memset(line + n, 'a' + i % 26, LINE - n - 1);
		line[LINE - 1] = '\n';
		if (!send(&b, 1))
			break;
	}
	kit_free(line);
}

/*
 * One chain larger than lkvm's whole console queue (64 KiB), in 10
 * buffers: it cannot be held until it fits, so lkvm writes what fits and
 * counts the chain as cut; the driver still gets it back.
 */
static void check_too_big(void)
{
	static struct vio_buf bufs[10];
	char *big = kit_malloc(100 * 1024);

	memset(big, 'z', 100 * 1024);
	big[100 * 1024 - 1] = '\n';
	for (unsigned int i = 0; i < 10; i++)
		bufs[i] = (struct vio_buf) { (uintptr_t)big + i * 10240, 10240,
					     false };
	send(bufs, 10);
	kit_free(big);
}

static void check_input(void)
{
	char in[8] = "";
	char key[2];

	for (unsigned int i = 0; i < RX_BUFS; i++) {
		rx_buf[i] = kit_zalloc(RX_LEN);
		post_rx(i);
	}
	vio_kick(&rxq);
	kit_printf("hvc: ready for input\n");
	if (kit_check(receive(in, 5) == 5 && !memcmp(in, "ping\n", 5),
		      "typed input: '%s'", in))
		send_text("HVC got ping\n");
	kit_printf("hvc: ready for sysrq\n");
	if (kit_check(receive(key, 2) == 2, "no SysRq bytes"))
		kit_printf("hvc: sysrq bytes %02x %02x\n", key[0], key[1]);
}

KIT_TEST(hvc)
{
	if (!kit_check(find_console() && dev.device_id == VIRTIO_ID_CONSOLE,
		       "no virtio-console device") ||
	    !kit_check(!vio_negotiate(&dev, F_EMERG_WRITE),
		       "feature negotiation (EMERG_WRITE)"))
		kit_finish();
	for (const char *p = "HVC emergency\n"; *p; p++)
		vio_config_write32(&dev, EMERG_WR, (uint8_t)*p);
	if (!kit_check(!vio_queue_setup(&rxq, &dev, 0, 16), "receiveq setup") ||
	    !kit_check(!vio_queue_setup(&txq, &dev, 1, 16), "transmitq setup"))
		kit_finish();
	vio_driver_ok(&dev);
	check_output();
	check_bulk(kit_cmdline_u64("bulk", 0));
	if (kit_cmdline_has("too_big"))
		check_too_big();
	if (kit_cmdline_has("input"))
		check_input();
	kit_check(!(vio_status(&dev) & VIO_STATUS_NEEDS_RESET),
		  "the device broke");
	kit_finish();
}
