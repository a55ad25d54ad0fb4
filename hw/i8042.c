// SPDX-License-Identifier: GPL-2.0
/*
 * A PS/2 controller with no keyboard or mouse behind it. It answers the
 * controller commands Linux's i8042 probe sends (self-test, config byte,
 * port tests) so that the probe ends quickly, and it implements the reset
 * line: command 0xfe, or clearing bit 0 of the output port, is how the
 * kernel's "reboot=k" path (and many firmwares) reset the machine.
 */
#include <string.h>

#include "lkvm/bus.h"
#include "lkvm/hw.h"
#include "lkvm/vm.h"

#define I8042_STATUS_OBF	0x01
#define I8042_STATUS_SYS	0x04
#define I8042_STATUS_CMD	0x08
#define I8042_STATUS_UNLOCKED	0x10	/* keyboard not inhibited */

#define I8042_CMD_READ_CTR	0x20
#define I8042_CMD_WRITE_CTR	0x60
#define I8042_CMD_AUX_DISABLE	0xa7
#define I8042_CMD_AUX_ENABLE	0xa8
#define I8042_CMD_AUX_TEST	0xa9
#define I8042_CMD_SELF_TEST	0xaa
#define I8042_CMD_KBD_TEST	0xab
#define I8042_CMD_KBD_DISABLE	0xad
#define I8042_CMD_KBD_ENABLE	0xae
#define I8042_CMD_READ_OUTPUT	0xd0
#define I8042_CMD_WRITE_OUTPUT	0xd1
#define I8042_CMD_WRITE_AUX	0xd4
#define I8042_CMD_RESET_PULSE	0xfe

#define I8042_SELF_TEST_OK	0x55
#define I8042_PORT_TEST_OK	0x00

/* vCPU threads only; `lock` guards the state. */
struct i8042 {
	struct bus_dev data_dev;
	struct bus_dev cmd_dev;
	struct vm *vm;
	pthread_mutex_t lock;
	uint8_t ctr;		/* controller configuration byte */
	uint8_t pending_cmd;	/* command waiting for its data byte */
	uint8_t out;		/* output buffer */
	bool out_full;
};

static void i8042_reset_line(struct i8042 *k)
{
	vm_request_exit(k->vm, EXIT_GUEST_REBOOT,
			"guest asked to reboot (i8042 reset line)");
}

static void i8042_output(struct i8042 *k, uint8_t val)
{
	k->out = val;
	k->out_full = true;
}

static void i8042_command(struct i8042 *k, uint8_t cmd)
{
	switch (cmd) {
	case I8042_CMD_READ_CTR:
		i8042_output(k, k->ctr);
		break;
	case I8042_CMD_WRITE_CTR:
	case I8042_CMD_WRITE_OUTPUT:
	case I8042_CMD_WRITE_AUX:
		k->pending_cmd = cmd;
		break;
	case I8042_CMD_SELF_TEST:
		i8042_output(k, I8042_SELF_TEST_OK);
		break;
	case I8042_CMD_AUX_TEST:
	case I8042_CMD_KBD_TEST:
		i8042_output(k, I8042_PORT_TEST_OK);
		break;
	case I8042_CMD_READ_OUTPUT:
		i8042_output(k, 0x01);	/* reset line not asserted */
		break;
	case I8042_CMD_RESET_PULSE:
		i8042_reset_line(k);
		break;
	default:
		break;	/* port enable/disable: nothing behind them */
	}
}

static void i8042_data_write(struct i8042 *k, uint8_t val)
{
	uint8_t cmd = k->pending_cmd;

	k->pending_cmd = 0;
	if (cmd == I8042_CMD_WRITE_CTR)
		k->ctr = val;
	else if (cmd == I8042_CMD_WRITE_OUTPUT && !(val & 0x01))
		i8042_reset_line(k);
	/* Bytes for the (absent) keyboard or mouse are dropped: no ACK. */
}

static void i8042_read(struct bus_dev *dev, uint64_t offset, void *data,
		       unsigned int len)
{
	struct i8042 *k = dev->priv;
	uint8_t val;

	pthread_mutex_lock(&k->lock);
	if (dev == &k->data_dev) {
		val = k->out;
		k->out_full = false;
	} else {
		val = I8042_STATUS_SYS | I8042_STATUS_UNLOCKED |
		      (k->out_full ? I8042_STATUS_OBF : 0) |
		      (k->pending_cmd ? I8042_STATUS_CMD : 0);
	}
	pthread_mutex_unlock(&k->lock);
	memset(data, 0, len);
	*(uint8_t *)data = val;
}

static void i8042_write(struct bus_dev *dev, uint64_t offset,
			const void *data, unsigned int len)
{
	struct i8042 *k = dev->priv;
	uint8_t val = *(const uint8_t *)data;

	pthread_mutex_lock(&k->lock);
	if (dev == &k->data_dev)
		i8042_data_write(k, val);
	else
		i8042_command(k, val);
	pthread_mutex_unlock(&k->lock);
}

static const struct bus_ops i8042_ops = {
	.read = i8042_read,
	.write = i8042_write,
};

int i8042_init(struct vm *vm, uint16_t data_port, uint16_t cmd_port)
{
	struct i8042 *k = vm_zalloc(vm, sizeof(*k));

	if (!k)
		return -1;
	k->vm = vm;
	k->ctr = 0x30;		/* both ports disabled, no interrupts */
	pthread_mutex_init(&k->lock, NULL);
	k->data_dev = (struct bus_dev) { .name = "i8042", .ops = &i8042_ops, .priv = k };
	k->cmd_dev = k->data_dev;
	if (bus_register(&vm->pio, data_port, 1, &k->data_dev))
		return -1;
	return bus_register(&vm->pio, cmd_port, 1, &k->cmd_dev);
}
