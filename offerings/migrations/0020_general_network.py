"""The general network gets a field of its own (issue 30, item 2).

Until now a type whose only network was its general one (plain Ethernet: VPC, storage, internet)
kept that figure as its fabric bandwidth, so it ranked and filtered beside back-end fabrics. The
figure moves to `network_gbits_per_s` with its basis; the NIC count and port speed of such a row,
which described the same general network, are cleared, and so are their locks. A curator's lock on
the bandwidth follows the figure to its new field.
"""

from django.db import migrations, models


BACKEND = ("bandwidth_gbits_per_s", "nics", "port_speed_gbits_per_s")


def move_general_network(apps, schema_editor):
    Fabric = apps.get_model("offerings", "Fabric")
    for fabric in Fabric.objects.filter(technology="ethernet"):
        if fabric.bandwidth_gbits_per_s is not None and fabric.network_gbits_per_s is None:
            fabric.network_gbits_per_s = fabric.bandwidth_gbits_per_s
            if "bandwidth_gbits_per_s" in fabric.basis:
                fabric.basis["network_gbits_per_s"] = fabric.basis["bandwidth_gbits_per_s"]
            if "bandwidth_gbits_per_s" in fabric.locked_fields:
                fabric.locked_fields.append("network_gbits_per_s")
        for name in BACKEND:
            setattr(fabric, name, None)
            fabric.basis.pop(name, None)
        fabric.locked_fields = [f for f in fabric.locked_fields if f not in BACKEND]
        # The row no longer matches its fixture entry: the next load_catalog rewrites it.
        fabric.fixture_digest = "moved-general-network"
        fabric.save()


def move_it_back(apps, schema_editor):
    Fabric = apps.get_model("offerings", "Fabric")
    for fabric in Fabric.objects.filter(technology="ethernet", network_gbits_per_s__isnull=False):
        fabric.bandwidth_gbits_per_s = fabric.network_gbits_per_s
        if "network_gbits_per_s" in fabric.basis:
            fabric.basis["bandwidth_gbits_per_s"] = fabric.basis.pop("network_gbits_per_s")
        fabric.save()


class Migration(migrations.Migration):

    dependencies = [
        ('offerings', '0019_local_names'),
    ]

    operations = [
        migrations.AddField(
            model_name='fabric',
            name='network_gbits_per_s',
            field=models.PositiveIntegerField(blank=True, help_text="The instance's general network (VPC, storage, internet), Gb/s.", null=True),
        ),
        migrations.AddField(
            model_name='fabric',
            name='network_shared',
            field=models.BooleanField(blank=True, help_text='The back-end and the general network run over the same network cards.', null=True),
        ),
        migrations.AlterField(
            model_name='fabric',
            name='bandwidth_gbits_per_s',
            field=models.PositiveIntegerField(blank=True, help_text='Sum of back-end line rates per node; empty for plain Ethernet (no back-end).', null=True),
        ),
        migrations.RunPython(move_general_network, move_it_back),
        migrations.AddConstraint(
            model_name='fabric',
            constraint=models.CheckConstraint(condition=models.Q(('network_gbits_per_s__isnull', True), ('network_gbits_per_s__gt', 0), _connector='OR'), name='fabric_network_positive', violation_error_message='The general network must be more than zero Gb/s, or empty when unknown.'),
        ),
        migrations.AddConstraint(
            model_name='fabric',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('technology', 'ethernet'), _negated=True), models.Q(('bandwidth_gbits_per_s__isnull', True), ('nics__isnull', True), ('port_speed_gbits_per_s__isnull', True)), _connector='OR'), name='fabric_ethernet_has_no_backend', violation_error_message='A type with plain Ethernet only has no back-end network: give its Gb/s as the general network.'),
        ),
        migrations.AddConstraint(
            model_name='fabric',
            constraint=models.CheckConstraint(condition=models.Q(models.Q(('technology', 'ethernet'), _negated=True), models.Q(('network_shared', True), _negated=True), _connector='OR'), name='fabric_ethernet_shares_nothing', violation_error_message='With plain Ethernet only there is no back-end network to share the general one with.'),
        ),
    ]
