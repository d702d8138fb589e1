"""A fabric states its generation, for the two fabrics whose generations perform differently: AWS
EFA (v1 to v4) and Google's GPUDirect-TCPX and TCPXO. Empty until a source states it; the next
`load_catalog` fills it from the fixtures, with its basis.
"""

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('offerings', '0023_catalog_version_moment_in_commit_order'),
    ]

    operations = [
        migrations.AddField(
            model_name='fabric',
            name='generation',
            field=models.CharField(blank=True, choices=[('', 'Unknown or not applicable'), ('efa-v1', 'EFA v1'), ('efa-v2', 'EFA v2'), ('efa-v3', 'EFA v3'), ('efa-v4', 'EFA v4'), ('tcpx', 'GPUDirect-TCPX'), ('tcpxo', 'GPUDirect-TCPXO')], default='', help_text='EFA v1-v4, or GPUDirect-TCPX or TCPXO; empty when no source states it or for another technology.', max_length=20),
        ),
        migrations.AddConstraint(
            model_name='fabric',
            constraint=models.CheckConstraint(condition=models.Q(('generation', ''), models.Q(('generation__in', ['efa-v1', 'efa-v2', 'efa-v3', 'efa-v4']), ('technology', 'efa')), models.Q(('generation__in', ['tcpx', 'tcpxo']), ('technology', 'tcpx')), _connector='OR'), name='fabric_generation_matches_technology', violation_error_message='An EFA generation (efa-v1 to efa-v4) needs technology EFA, and tcpx or tcpxo needs technology TCPX; leave it empty otherwise.'),
        ),
    ]
