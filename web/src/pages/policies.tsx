export default function PoliciesPage() {
  return (
    <section className="page">
      <h1>Policies</h1>
    </section>
  );
}
